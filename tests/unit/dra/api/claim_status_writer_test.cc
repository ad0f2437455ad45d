// Tests of the API side of the claim status (dra/api/claim_status_writer.h) against the fake API
// server, which validates and authorizes status.devices as kube-apiserver v1.36 does.
#include "dra/api/claim_status_writer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_api_server.h"
#include "support/temp_dir.h"
#include "unit/dra/api/fake_api_client.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kGpu[] = "gpu.nvidia.com";

ClaimDeadline Soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(30); }

json Claim() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ml", "name": "train", "uid": "claim-uid"},
    "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "rdma-roce"}},
                                      {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
    "status": {
      "allocation": {"devices": {"results": [
        {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-1"},
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node1", "device": "gpu-0"}]}},
      "reservedFor": [{"resource": "pods", "name": "p0", "uid": "pod-uid-0"}]}})");
}

json GpuEntry() {
  return {{"driver", kGpu}, {"pool", "node1"}, {"device", "gpu-0"},
          {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Ok"},
                           {"lastTransitionTime", "2026-12-05T01:00:00Z"}}}}};
}

// What our driver writes for each device of ours; `extra` merged into each entry.
StatusEntriesFn Entries(json extra = json::object()) {
  return [extra](const std::vector<AllocatedDevice>& ours, const json&) {
    json out = json::array();
    for (const auto& a : ours) {
      json e = {{"driver", kDriver}, {"pool", a.pool}, {"device", a.device},
                {"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Ready"},
                                 {"lastTransitionTime", "2026-12-05T02:00:00Z"}}}},
                {"data", {{"rdmaDev", "mlx5_1"}}}};
      e.update(extra);
      out.push_back(e);
    }
    return out;
  };
}
StatusEntriesFn None() {
  return [](const std::vector<AllocatedDevice>&, const json&) { return json::array(); };
}

class ClaimStatusWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start(dir_.path() + "/api.sock"));
    client_ = ClientOf(server_, dir_.path() + "/api.sock");
    versions_ = std::make_unique<ApiVersionSource>(client_.get());
    writer_ = std::make_unique<ApiClaimStatusWriter>(client_.get(), versions_.get(), kDriver);
    server_.AddClaim(Claim());
    server_.GrantClaimStatus({kDriver});
  }
  json Devices() { return server_.Claim("ml", "train")["status"].value("devices", json::array()); }
  int Puts() { return server_.CountRequests("PUT /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train/status"); }

  rdmak8s::testing::TempDir dir_;
  rdmak8s::testing::FakeApiServer server_;
  std::unique_ptr<CurlKubeClient> client_;
  std::unique_ptr<ApiVersionSource> versions_;
  std::unique_ptr<ApiClaimStatusWriter> writer_;
};

TEST_F(ClaimStatusWriterTest, OurEntriesAreWrittenForOurDevicesOnlyAndRemovedAgain) {
  std::vector<AllocatedDevice> seen;
  Status s = writer_->Update("ml", "train", "claim-uid",
                             [&](const std::vector<AllocatedDevice>& ours, const json& current) {
                               seen = ours;
                               EXPECT_EQ(current, json::array());
                               return Entries()(ours, current);
                             },
                             Soon());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(seen, (std::vector<AllocatedDevice>{{"nic", "node1", "mlx5-1", ""}}));
  ASSERT_EQ(Devices().size(), 1u);
  EXPECT_EQ(Devices()[0]["device"], "mlx5-1");
  EXPECT_EQ(Devices()[0]["data"]["rdmaDev"], "mlx5_1");

  ASSERT_TRUE(writer_->Update("ml", "train", "claim-uid", None(), Soon()).ok());
  EXPECT_EQ(Devices(), json::array());
}

TEST_F(ClaimStatusWriterTest, NothingIsSentWhenOurEntriesAreAlreadyWhatTheServerHolds) {
  ASSERT_TRUE(writer_->Update("ml", "train", "claim-uid", Entries(), Soon()).ok());
  ASSERT_EQ(Puts(), 1);
  ASSERT_TRUE(writer_->Update("ml", "train", "claim-uid", Entries(), Soon()).ok());
  EXPECT_EQ(Puts(), 1);
}

TEST_F(ClaimStatusWriterTest, AnotherDriversEntriesSurviveAConflictingWriteAndOursAreAddedAfterIt) {
  server_.ConflictNextClaimStatusUpdates(GpuEntry());
  Status s = writer_->Update("ml", "train", "claim-uid", Entries(), Soon());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Puts(), 2);  // the first met the GPU driver's update (409), the second took it in
  json devices = Devices();
  ASSERT_EQ(devices.size(), 2u) << devices.dump();
  EXPECT_EQ(devices[0], GpuEntry());
  EXPECT_EQ(devices[1]["driver"], kDriver);
  // Removing ours leaves theirs.
  ASSERT_TRUE(writer_->Update("ml", "train", "claim-uid", None(), Soon()).ok());
  EXPECT_EQ(Devices(), json::array({GpuEntry()}));
}

TEST_F(ClaimStatusWriterTest, ConflictsWithoutEndAreGivenUpAfterABoundedNumberOfAttempts) {
  server_.ConflictNextClaimStatusUpdates(GpuEntry(), 100);
  Status s = writer_->Update("ml", "train", "claim-uid", Entries(), Soon());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.message();
  EXPECT_EQ(Puts(), ApiClaimStatusWriter::kMaxAttempts);
}

TEST_F(ClaimStatusWriterTest, WithoutTheResourceClaimsDriverGrantTheServerRefusesAndTheErrorNamesTheRbac) {
  server_.GrantClaimStatus({kGpu});
  Status s = writer_->Update("ml", "train", "claim-uid", Entries(), Soon());
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.message();
  EXPECT_NE(s.message().find("changing status.devices requires resource=\"resourceclaims/driver\""), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("resourceName rdma.rdmak8s.io"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rbac.yaml"), std::string::npos) << s.message();
  EXPECT_EQ(Devices(), json::array());
}

TEST_F(ClaimStatusWriterTest, TheFakeServerRefusesWhatTheRealOneValidates) {
  auto refused = [&](json extra) {
    Status s = writer_->Update("ml", "train", "claim-uid", Entries(extra), Soon());
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(Devices(), json::array());
    return s.message();
  };
  json ips = json::array();
  for (int i = 0; i < 17; ++i) ips.push_back("10.0.0." + std::to_string(i + 1) + "/24");
  EXPECT_NE(refused({{"networkData", {{"ips", ips}}}}).find("networkData.ips: Too many: 17"), std::string::npos);
  EXPECT_NE(refused({{"networkData", {{"ips", {"10.0.0.5"}}}}}).find("must be a valid address in CIDR form"),
            std::string::npos);
  EXPECT_NE(refused({{"networkData", {{"interfaceName", std::string(257, 'a')}}}}).find("interfaceName: Too long"),
            std::string::npos);
  EXPECT_NE(refused({{"networkData", {{"hardwareAddress", std::string(129, 'a')}}}}).find("hardwareAddress: Too long"),
            std::string::npos);
  EXPECT_NE(refused({{"data", {{"x", std::string(10240, 'a')}}}}).find("data: Too long"), std::string::npos);
  EXPECT_NE(refused({{"device", "mlx5-9"}}).find("must be an allocated device in the claim"), std::string::npos);
  EXPECT_NE(refused({{"shareID", "0b5ae5c4-1f60-4e0e-9d55-1c2b6f3b7d01"}}).find("must be an allocated device"),
            std::string::npos);
  json no_time = {{"conditions", {{{"type", "Ready"}, {"status", "True"}, {"reason", "Ready"}}}}};
  EXPECT_NE(refused(no_time).find("lastTransitionTime: Required value"), std::string::npos);
  json twice = [] {
    json out = json::array();
    for (int i = 0; i < 2; ++i) {
      out.push_back({{"driver", kDriver}, {"pool", "node1"}, {"device", "mlx5-1"}});
    }
    return out;
  }();
  Status s = writer_->Update("ml", "train", "claim-uid",
                             [&](const std::vector<AllocatedDevice>&, const json&) { return twice; }, Soon());
  EXPECT_NE(s.message().find("Duplicate value"), std::string::npos) << s.message();
}

TEST_F(ClaimStatusWriterTest, AShareOfAConsumableCapacityDeviceIsNamedByItsShareId) {
  constexpr char kShare[] = "0b5ae5c4-1f60-4e0e-9d55-1c2b6f3b7d01";
  json c = Claim();
  c["status"]["allocation"]["devices"]["results"][0]["shareID"] = kShare;
  server_.AddClaim(c);
  std::vector<AllocatedDevice> seen;
  auto with_share = [&](const std::vector<AllocatedDevice>& ours, const json& current) {
    seen = ours;
    json out = Entries()(ours, current);
    for (size_t i = 0; i < ours.size(); ++i) out[i]["shareID"] = ours[i].share_id;
    return out;
  };
  Status s = writer_->Update("ml", "train", "claim-uid", with_share, Soon());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(seen, (std::vector<AllocatedDevice>{{"nic", "node1", "mlx5-1", kShare}}));
  EXPECT_EQ(Devices()[0]["shareID"], kShare);
  // The same device without its share is not the allocated one.
  ASSERT_TRUE(writer_->Update("ml", "train", "claim-uid", None(), Soon()).ok());
  s = writer_->Update("ml", "train", "claim-uid", Entries(), Soon());
  EXPECT_NE(s.message().find("must be an allocated device in the claim"), std::string::npos) << s.message();
}

TEST_F(ClaimStatusWriterTest, AClaimGoneOrReplacedOrDeallocatedIsNotWritten) {
  EXPECT_EQ(writer_->Update("ml", "gone", "claim-uid", Entries(), Soon()).code(), StatusCode::kNotFound);
  EXPECT_EQ(writer_->Update("ml", "train", "other-uid", Entries(), Soon()).code(), StatusCode::kFailedPrecondition);
  json c = Claim();
  c["status"].erase("allocation");
  c["status"].erase("reservedFor");
  server_.AddClaim(c);
  EXPECT_TRUE(writer_->Update("ml", "train", "claim-uid", Entries(), Soon()).ok());
  EXPECT_EQ(Puts(), 0);
}

}  // namespace
}  // namespace rdmak8s::dra
