// Tests of the claim status loop (dra/claim_status_reporter.h) with the preparer and the real API
// writer against the fake API server: entries at prepare, the CNI's facts once they come, gone at
// unprepare; a missing RBAC reported clearly while the prepare succeeds.
#include "dra/claim_status_reporter.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dra/api/claim_status_writer.h"
#include "dra/preparer.h"
#include "fakes/fake_api_server.h"
#include "fakes/fake_claim_reader.h"
#include "support/attachment_facts_sample.h"
#include "support/log_capture.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"
#include "unit/dra/api/fake_api_client.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kPool[] = "node-a";

json ClaimJson() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "team", "name": "nic-claim", "uid": "uid-1"},
    "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "rdma-roce"}}]}},
    "status": {
      "allocation": {"devices": {"results": [
        {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node-a", "device": "mlx5-2"}]}},
      "reservedFor": [{"resource": "pods", "name": "p0", "uid": "pod-1"}]}})");
}

ResourceClaim ClaimModel() {
  ResourceClaim c;
  c.namespace_name = "team";
  c.name = "nic-claim";
  c.uid = "uid-1";
  c.allocated = true;
  c.results = {{"nic", kDriver, kPool, "mlx5-2"}};
  c.reserved_for = {{"", "pods", "p0", "pod-1"}};
  return c;
}

AttachmentFacts Facts() { return rdmak8s::testing::SampleAttachmentFacts("uid-1", "c1", "mlx5-2"); }

class ClaimStatusReporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start(tmp_.path() + "/api.sock"));
    client_ = ClientOf(server_, tmp_.path() + "/api.sock");
    versions_ = std::make_unique<ApiVersionSource>(client_.get());
    writer_ = std::make_unique<ApiClaimStatusWriter>(client_.get(), versions_.get(), kDriver);
    server_.AddClaim(ClaimJson());
    reader_.Put(ClaimModel());
    catalog_.Update({{"mlx5_2", {dp::testdev::Roce("mlx5_2", 2, "eth0"), {}, node::Presence::kPresent}}});

    PreparerOptions p;
    p.driver_name = kDriver;
    p.state_dir = tmp_.path() + "/state";
    p.cdi_dir = tmp_.path() + "/cdi";
    p.pod_devices_dir = tmp_.path() + "/pods";
    fs::create_directories(p.cdi_dir);
    preparer_ = std::move(*Preparer::Create(p, &reader_, &catalog_));
    ClaimStatusReporterOptions r;
    r.driver_name = kDriver;
    r.pod_devices_dir = p.pod_devices_dir;
    r.now = [] { return int64_t{1796436000}; };
    reporter_ = std::make_unique<ClaimStatusReporter>(r, writer_.get(), &catalog_, &metrics_);
    preparer_->ReportStatusTo(reporter_.get());
  }
  json Devices() { return server_.Claim("team", "nic-claim")["status"].value("devices", json::array()); }
  ClaimRef Ref() { return {"team", "uid-1", "nic-claim"}; }
  std::string Conditions() {
    std::string out;
    const json devices = Devices();
    for (const auto& c : devices[0]["conditions"]) {
      out += c["type"].get<std::string>() + "=" + c["status"].get<std::string>() + " ";
    }
    return out;
  }

  rdmak8s::testing::TempDir tmp_;
  rdmak8s::testing::FakeApiServer server_;
  std::unique_ptr<CurlKubeClient> client_;
  std::unique_ptr<ApiVersionSource> versions_;
  std::unique_ptr<ApiClaimStatusWriter> writer_;
  fake::FakeClaimReader reader_;
  DeviceCatalog catalog_{kPool};
  DraMetrics metrics_{&catalog_, true};
  std::unique_ptr<Preparer> preparer_;
  std::unique_ptr<ClaimStatusReporter> reporter_;
};

TEST_F(ClaimStatusReporterTest, APreparedClaimSaysWhatThePodGotThenTheCnisFactsAndUnprepareRemovesIt) {
  server_.GrantClaimStatus({kDriver});
  ASSERT_TRUE(preparer_->Prepare(Ref()).ok());
  reporter_->SyncOnce();
  ASSERT_EQ(Devices().size(), 1u) << server_.Claim("team", "nic-claim").dump();
  EXPECT_EQ(Devices()[0]["device"], "mlx5-2");
  EXPECT_EQ(Devices()[0]["data"]["rdmaDev"], "mlx5_2");
  EXPECT_EQ(Conditions(), "Ready=True PortActive=True GidPresent=Unknown QosApplied=Unknown ");
  EXPECT_FALSE(Devices()[0].contains("networkData"));

  // The CNI's ADD leaves its facts; the next pass puts them in the claim.
  ASSERT_TRUE(WriteAttachmentFacts(tmp_.path() + "/pods", Facts()).ok());
  reporter_->SyncOnce();
  EXPECT_EQ(Devices()[0]["networkData"]["ips"], json({"10.0.0.5/24"}));
  EXPECT_EQ(Devices()[0]["data"]["gidIndex"], 3);
  EXPECT_EQ(Conditions(), "Ready=True PortActive=True GidPresent=True QosApplied=True ");

  ASSERT_TRUE(preparer_->Unprepare(Ref()).ok());
  EXPECT_FALSE(fs::exists(tmp_.path() + "/pods/.attachments/uid-1"));
  reporter_->SyncOnce();
  EXPECT_EQ(Devices(), json::array());
  EXPECT_EQ(reporter_->pending(), 0u);
  EXPECT_NE(metrics_.Scrape().find("rdmak8s_dra_claim_status_writes_total{result=\"ok\"} 3"), std::string::npos)
      << metrics_.Scrape();
}

TEST_F(ClaimStatusReporterTest, APassWithNothingChangedSendsNothing) {
  server_.GrantClaimStatus({kDriver});
  ASSERT_TRUE(preparer_->Prepare(Ref()).ok());
  reporter_->SyncOnce();
  const int requests = static_cast<int>(server_.Requests().size());
  reporter_->SyncOnce();
  reporter_->SyncOnce();
  EXPECT_EQ(static_cast<int>(server_.Requests().size()), requests);
}

TEST_F(ClaimStatusReporterTest, WithoutTheRbacThePrepareSucceedsAndTheMissingGrantIsLoggedOnceAndCounted) {
  rdmak8s::testing::LogCapture log;
  auto prepared = preparer_->Prepare(Ref());
  ASSERT_TRUE(prepared.ok()) << prepared.status().message();
  reporter_->SyncOnce();
  reporter_->SyncOnce();  // backing off: not retried at once, not logged again
  EXPECT_EQ(Devices(), json::array());
  const std::string text = log.Text();
  const size_t first = text.find("E claim team/nic-claim: status.devices not written");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_NE(text.find("resourceclaims/driver", first), std::string::npos) << text;
  EXPECT_NE(text.find("resourceName rdma.rdmak8s.io", first), std::string::npos) << text;
  EXPECT_EQ(text.find("E claim team/nic-claim", first + 1), std::string::npos) << text;
  EXPECT_NE(metrics_.Scrape().find("rdmak8s_dra_claim_status_writes_total{result=\"forbidden\"} 1"),
            std::string::npos)
      << metrics_.Scrape();
}

TEST_F(ClaimStatusReporterTest, AFactsFileOthersCouldWriteIsLeftOutAndNamedInTheLogOnce) {
  server_.GrantClaimStatus({kDriver});
  ASSERT_TRUE(WriteAttachmentFacts(tmp_.path() + "/pods", Facts()).ok());
  std::string planted;
  for (const auto& e : fs::directory_iterator(tmp_.path() + "/pods/.attachments/uid-1")) planted = e.path();
  fs::permissions(planted, fs::perms::others_write, fs::perm_options::add);
  rdmak8s::testing::LogCapture log;
  ASSERT_TRUE(preparer_->Prepare(Ref()).ok());
  reporter_->SyncOnce();
  reporter_->SyncOnce();
  ASSERT_EQ(Devices().size(), 1u);
  EXPECT_FALSE(Devices()[0].contains("networkData"));
  EXPECT_EQ(Conditions(), "Ready=True PortActive=True GidPresent=Unknown QosApplied=Unknown ");
  const std::string text = log.Text();
  const size_t first = text.find("W claim team/nic-claim: attachment facts not used: " + planted);
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("W claim team/nic-claim: attachment", first + 1), std::string::npos) << text;
}

TEST_F(ClaimStatusReporterTest, TheLoopWritesAPreparedClaimWithoutBeingAsked) {
  server_.GrantClaimStatus({kDriver});
  reporter_->Start();
  ASSERT_TRUE(preparer_->Prepare(Ref()).ok());
  // Wait for the event (the PUT's answer stored), never for a time.
  for (;;) {
    if (!Devices().empty()) break;
    std::this_thread::yield();
  }
  reporter_->Stop();
  EXPECT_EQ(Devices()[0]["driver"], kDriver);
}

}  // namespace
}  // namespace rdmak8s::dra
