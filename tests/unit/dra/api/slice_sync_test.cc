// SliceSync over the fake API server (real HTTP on a unix socket) and a DeviceCatalog fed by the
// test: published at start, republished after each catalog change, retried after errors, ended
// by the catalog's shutdown.
#include "dra/api/slice_sync.h"

#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_api_server.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;
constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr auto kWait = std::chrono::seconds(10);

class SliceSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start(dir_.path() + "/api.sock"));
    server_.AddNode("node1", "node-uid-1");
    KubeConfig c;
    c.server = server_.url();
    c.unix_socket = dir_.path() + "/api.sock";
    RetryPolicy retry;
    retry.max_attempts = 1;  // the loop's own backoff is what is under test
    client_ = std::move(*CurlKubeClient::Create(c, retry));
    PublisherOptions o;
    o.driver = kDriver;
    o.node_name = "node1";
    publisher_ = std::make_unique<SlicePublisher>(client_.get(), o);
    SetDevices(true);
  }
  void TearDown() override {
    catalog_.Shutdown();
    if (run_.joinable()) run_.join();
  }
  void Run() {
    SliceSyncOptions o;
    o.sysfs_root = dir_.path();  // no PCI tree: pcieRoot left out, said in the notes
    o.initial_backoff = std::chrono::milliseconds(10);
    o.max_backoff = std::chrono::milliseconds(40);
    o.on_publish = [this](const Status& s) {
      std::lock_guard<std::mutex> lock(mu_);
      results_.push_back(s);
    };
    sync_ = std::make_unique<SliceSync>(publisher_.get(), &catalog_, o);
    run_ = std::thread([this] { sync_->Run(); });
  }
  void SetDevices(bool mlx5_1_healthy, bool with_mlx5_2 = false) {
    std::map<std::string, dp::TrackedDevice> t = {
        {"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {}, dp::Presence::kPresent}},
        {"mlx5_1", {dp::testdev::Ib("mlx5_1", 1, "0000:3b:00.1"),
                    {mlx5_1_healthy, mlx5_1_healthy ? "" : "port 1 state DOWN"}, dp::Presence::kPresent}}};
    if (with_mlx5_2) t["mlx5_2"] = {dp::testdev::Roce("mlx5_2", 2, "eth0"), {}, dp::Presence::kPresent};
    catalog_.Update(t);
  }
  // The published device names, and whether `tainted` carries the unhealthy taint.
  std::vector<std::string> Published() const {
    std::vector<std::string> out;
    for (const auto& s : server_.Slices()) {
      for (const auto& d : s["spec"].value("devices", json::array())) out.push_back(d["name"]);
    }
    return out;
  }
  bool Tainted(const std::string& device) const {
    for (const auto& s : server_.Slices()) {
      for (const auto& d : s["spec"].value("devices", json::array())) {
        if (d["name"] == device) return d.contains("taints") && !d["taints"].empty();
      }
    }
    return false;
  }
  bool WaitUntil(const std::function<bool()>& pred) const {
    auto deadline = std::chrono::steady_clock::now() + kWait;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  rdmak8s::testing::TempDir dir_;
  rdmak8s::testing::FakeApiServer server_;
  std::unique_ptr<CurlKubeClient> client_;
  std::unique_ptr<SlicePublisher> publisher_;
  DeviceCatalog catalog_{"node1"};
  std::unique_ptr<SliceSync> sync_;
  std::thread run_;
  mutable std::mutex mu_;
  std::vector<Status> results_;
};

TEST_F(SliceSyncTest, PublishesAtStartAndAfterEveryCatalogChange) {
  Run();
  ASSERT_TRUE(WaitUntil([&] { return Published() == std::vector<std::string>{"mlx5-0", "mlx5-1"}; }));
  EXPECT_FALSE(Tainted("mlx5-1"));

  SetDevices(false);  // port down
  ASSERT_TRUE(WaitUntil([&] { return Tainted("mlx5-1"); }));
  SetDevices(false, true);  // hot-plug
  ASSERT_TRUE(WaitUntil([&] { return Published() == std::vector<std::string>{"mlx5-0", "mlx5-1", "mlx5-2"}; }));
  EXPECT_TRUE(WaitUntil([&] { return sync_->published_generation() == catalog_.generation(); }));
}

TEST_F(SliceSyncTest, AFailedPublishIsRetriedAndFinishesTheJob) {
  server_.FailNext(500, 3);
  Run();
  // The slices show on the server before Publish returns: wait for the loop to count it.
  ASSERT_TRUE(WaitUntil([&] { return sync_->publishes() >= 1; }));
  EXPECT_EQ(Published(), (std::vector<std::string>{"mlx5-0", "mlx5-1"}));
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_GE(results_.size(), 2u);
  EXPECT_FALSE(results_.front().ok());
  EXPECT_TRUE(results_.back().ok());
}

TEST_F(SliceSyncTest, CatalogShutdownEndsTheLoopAndLeavesTheSlices) {
  Run();
  ASSERT_TRUE(WaitUntil([&] { return sync_->publishes() >= 1; }));
  catalog_.Shutdown();
  run_.join();
  EXPECT_EQ(Published().size(), 2u);
  ASSERT_TRUE(publisher_->DeleteAll().ok());
  EXPECT_TRUE(server_.Slices().empty());
}

TEST(CatalogDeviceInputsTest, UnhealthyDevicesCarryTheCatalogsReason) {
  DeviceCatalog catalog("node1");
  catalog.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {false, "port 1 state DOWN"}, dp::Presence::kPresent}}});
  std::vector<std::string> notes;
  auto in = CatalogDeviceInputs(catalog.All(), "/nonexistent", &notes);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].device.name, "mlx5_0");
  EXPECT_FALSE(in[0].healthy);
  EXPECT_EQ(in[0].unhealthy_reason, "port 1 state DOWN");
  EXPECT_EQ(notes.size(), 1u) << "a root that cannot be read is said";
}

}  // namespace
}  // namespace rdmak8s::dra
