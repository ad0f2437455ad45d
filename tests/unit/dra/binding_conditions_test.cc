// Tests of the binding-condition setter (dra/binding_conditions.h) with the real claim status
// writer against the fake API server: PortActive=True once the IB port is ACTIVE (a catalog
// change, as the device watch makes it), PortActivationFailed=True after the timeout (an
// injected clock), and nothing written meanwhile.
#include "dra/binding_conditions.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dra/api/claim_status_writer.h"
#include "fakes/fake_api_server.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"
#include "unit/dra/api/fake_api_client.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kPool[] = "node-a";

// Allocated by the scheduler, which copied the device's binding conditions into the result.
json HeldClaimJson() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "team", "name": "ib-claim", "uid": "uid-1"},
    "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "rdma-ib"}}]}},
    "status": {"allocation": {"devices": {"results": [
        {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node-a", "device": "mlx5-0",
         "bindingConditions": ["PortActive"], "bindingFailureConditions": ["PortActivationFailed"]}]}}}})");
}

HeldClaim Held() { return {"team", "ib-claim", "uid-1", {{"nic", kPool, "mlx5-0", ""}}}; }

RdmaDevice IbPort(PortState state) {
  RdmaDevice d = dp::testdev::Ib("mlx5_0", 0);
  d.ports[0].state = state;
  return d;
}

// Forwards to the real writer and lets a test wait for a write (no sleeping).
class NotifyingWriter : public ClaimStatusWriter {
 public:
  explicit NotifyingWriter(ClaimStatusWriter* inner) : inner_(inner) {}
  Status Update(const std::string& ns, const std::string& name, const std::string& uid,
                const StatusEntriesFn& build, ClaimDeadline deadline) override {
    auto recording = [&](const std::vector<AllocatedDevice>& ours, const json& current) {
      json entries = build(ours, current);
      std::lock_guard<std::mutex> lock(mu_);
      last_ = entries;
      return entries;
    };
    Status s = inner_->Update(ns, name, uid, recording, deadline);
    std::lock_guard<std::mutex> lock(mu_);
    ++writes_;
    cv_.notify_all();
    return s;
  }
  bool WaitForWrites(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [&] { return writes_ >= n; });
  }
  int writes() {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }
  // The entries of the last write, as the writer sent them.
  json last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }

 private:
  ClaimStatusWriter* inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  int writes_ = 0;
  json last_;
};

class BindingConditionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start(tmp_.path() + "/api.sock"));
    client_ = ClientOf(server_, tmp_.path() + "/api.sock");
    versions_ = std::make_unique<ApiVersionSource>(client_.get());
    api_writer_ = std::make_unique<ApiClaimStatusWriter>(client_.get(), versions_.get(), kDriver);
    writer_ = std::make_unique<NotifyingWriter>(api_writer_.get());
    server_.AddClaim(HeldClaimJson());
    server_.GrantClaimStatus({kDriver});
    SetPort(PortState::kInit);
    BindingConditionOptions o;
    o.driver_name = kDriver;
    o.timeout = std::chrono::seconds(120);
    o.now = [this] { return now_; };
    o.wall_now = [] { return int64_t{1796436000}; };
    setter_ = std::make_unique<BindingConditionSetter>(o, writer_.get(), &catalog_);
  }
  void SetPort(PortState state) {
    catalog_.Update({{"mlx5_0", {IbPort(state), {}, node::Presence::kPresent}}});
  }
  // "Type=Status " of the first entry's conditions, "" without one.
  static std::string ConditionsOf(const json& devices) {
    std::string out;
    if (!devices.is_array() || devices.empty()) return out;
    for (const auto& c : devices[0].value("conditions", json::array())) {
      out += c.value("type", "") + "=" + c.value("status", "") + " ";
    }
    return out;
  }
  // Of our entry as the server holds it.
  std::string Conditions() {
    return ConditionsOf(server_.Claim("team", "ib-claim")["status"].value("devices", json::array()));
  }

  rdmak8s::testing::TempDir tmp_;
  rdmak8s::testing::FakeApiServer server_;
  std::unique_ptr<CurlKubeClient> client_;
  std::unique_ptr<ApiVersionSource> versions_;
  std::unique_ptr<ApiClaimStatusWriter> api_writer_;
  std::unique_ptr<NotifyingWriter> writer_;
  DeviceCatalog catalog_{kPool};
  Clock::time_point now_ = Clock::time_point() + std::chrono::hours(1);
  std::unique_ptr<BindingConditionSetter> setter_;
};

TEST_F(BindingConditionsTest, PortActiveIsSetTrueOnceThePortIsActiveAndNothingIsWrittenBefore) {
  setter_->Seen(Held());
  EXPECT_EQ(setter_->SyncOnce(), 0);
  EXPECT_EQ(writer_->writes(), 0);
  EXPECT_EQ(Conditions(), "");

  SetPort(PortState::kActive);  // the subnet manager brought it up
  EXPECT_EQ(setter_->SyncOnce(), 1);
  EXPECT_NE(Conditions().find("PortActive=True"), std::string::npos) << Conditions();
  EXPECT_EQ(Conditions().find("PortActivationFailed"), std::string::npos) << Conditions();
  EXPECT_TRUE(setter_->held().empty());
}

TEST_F(BindingConditionsTest, PortActivationFailedIsSetTrueWhenThePortIsNotActiveByTheTimeout) {
  setter_->Seen(Held());
  now_ += std::chrono::seconds(119);
  EXPECT_EQ(setter_->SyncOnce(), 0);
  EXPECT_EQ(Conditions(), "");
  SetPort(PortState::kArmed);
  now_ += std::chrono::seconds(1);
  EXPECT_EQ(setter_->SyncOnce(), 1);
  const json written = writer_->last();
  EXPECT_NE(ConditionsOf(written).find("PortActive=False"), std::string::npos) << written.dump();
  EXPECT_NE(ConditionsOf(written).find("PortActivationFailed=True"), std::string::npos) << written.dump();
  EXPECT_TRUE(setter_->held().empty());
  bool reason = false;
  for (const auto& c : written[0]["conditions"]) {
    if (c["type"] == "PortActivationFailed") reason = c["reason"] == kPortNotActiveReason;
  }
  EXPECT_TRUE(reason) << written.dump();
  // The server took the write: the scheduler's stand-in (tests/fakes/fake_allocator.h) saw the
  // failure condition and gave the allocation up, as the real scheduler does, so no entry stays.
  const json claim = server_.Claim("team", "ib-claim");
  EXPECT_FALSE(claim["status"].contains("allocation")) << claim.dump();
  EXPECT_EQ(Conditions(), "") << claim.dump();
}

// The device watch changes the catalog; Run answers at that change, not at a later tick.
TEST_F(BindingConditionsTest, RunSetsPortActiveWhenTheDeviceWatchReportsThePortActive) {
  setter_->Seen(Held());
  std::thread run([&] { setter_->Run(); });
  SetPort(PortState::kActive);
  const bool written = writer_->WaitForWrites(1);
  catalog_.Shutdown();
  run.join();
  ASSERT_TRUE(written);
  EXPECT_NE(Conditions().find("PortActive=True"), std::string::npos) << Conditions();
}

TEST_F(BindingConditionsTest, AClaimWithoutWaitingDevicesIsNotHeldAndGoneLetsGo) {
  HeldClaim none = Held();
  none.waiting.clear();
  setter_->Seen(none);
  EXPECT_TRUE(setter_->held().empty());
  setter_->Seen(Held());
  EXPECT_EQ(setter_->held().size(), 1u);
  setter_->Gone("uid-1");
  EXPECT_TRUE(setter_->held().empty());
  SetPort(PortState::kActive);
  EXPECT_EQ(setter_->SyncOnce(), 0);
}

}  // namespace
}  // namespace rdmak8s::dra
