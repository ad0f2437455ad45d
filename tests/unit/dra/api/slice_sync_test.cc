// SliceSync over the fake API server (real HTTP on a unix socket) and a DeviceCatalog fed by the
// test: published at start, republished after each catalog change, retried after errors, ended
// by the catalog's shutdown; and converging whatever else deletes the slices (kubelet at its
// start, the garbage collector after a Node is re-created), through its watch, a trigger or the
// periodic resync.
#include "dra/api/slice_sync.h"

#include <iostream>
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
  // The watch's options: a resync that never comes during a test unless asked for.
  static SliceSyncOptions Options(bool watch = true) {
    SliceSyncOptions o;
    o.initial_backoff = std::chrono::milliseconds(10);
    o.max_backoff = std::chrono::milliseconds(40);
    o.resync_interval = std::chrono::hours(1);
    o.watch = watch;
    return o;
  }
  void Run(SliceSyncOptions o = Options(/*watch=*/false)) {
    o.on_publish = [this](const Status& s) {
      std::lock_guard<std::mutex> lock(mu_);
      results_.push_back(s);
    };
    sync_ = std::make_unique<SliceSync>(publisher_.get(), &catalog_, o, client_.get());
    run_ = std::thread([this] { sync_->Run(); });
  }
  // Published, and the watch open on the server (what the watch must see happens after).
  void RunAndWaitForTheWatch() {
    Run(Options());
    ASSERT_TRUE(WaitUntil([&] { return Published().size() == 2u && server_.open_watches() >= 1; }))
        << "published " << Published().size() << ", watches " << server_.open_watches();
  }
  // The Node UID of every stored slice's owner.
  std::vector<std::string> OwnerUids() const {
    std::vector<std::string> out;
    for (const auto& s : server_.Slices()) out.push_back(s["metadata"]["ownerReferences"][0].value("uid", ""));
    return out;
  }
  void SetDevices(bool mlx5_1_healthy, bool with_mlx5_2 = false) {
    std::map<std::string, node::TrackedDevice> t = {
        {"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {}, node::Presence::kPresent}},
        {"mlx5_1", {dp::testdev::Ib("mlx5_1", 1, "0000:3b:00.1"),
                    {mlx5_1_healthy, mlx5_1_healthy ? "" : "port 1 state DOWN"}, node::Presence::kPresent}}};
    if (with_mlx5_2) t["mlx5_2"] = {dp::testdev::Roce("mlx5_2", 2, "eth0"), {}, node::Presence::kPresent};
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

TEST_F(SliceSyncTest, SlicesKubeletDeletesAtItsStartComeBackThroughTheWatch) {
  ASSERT_NO_FATAL_FAILURE(RunAndWaitForTheWatch());
  const auto deleted = std::chrono::steady_clock::now();
  ASSERT_EQ(server_.DeleteSlices("node1"), 1);  // kubelet's DeleteCollection at its start
  ASSERT_TRUE(WaitUntil([&] { return Published() == std::vector<std::string>{"mlx5-0", "mlx5-1"}; }))
      << "the deleted slice was never published again";
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - deleted);
  std::cout << "[ figure ] slice present again " << ms.count() << " ms after kubelet deleted it\n";
  EXPECT_GE(sync_->watch_events(), 1);
}

TEST_F(SliceSyncTest, AWatchWhoseResourceVersionWasCompactedRelistsAndStillSeesDeletions) {
  ASSERT_NO_FATAL_FAILURE(RunAndWaitForTheWatch());
  server_.CompactWatchHistory();
  server_.EndWatches();  // as an API server restart: the driver watches again from its version
  ASSERT_TRUE(WaitUntil([&] { return sync_->watch_relists() >= 1 && server_.open_watches() >= 1; }))
      << "relists " << sync_->watch_relists();
  ASSERT_EQ(server_.DeleteSlices("node1", kDriver), 1);
  EXPECT_TRUE(WaitUntil([&] { return Published().size() == 2u; })) << "not published again after the relist";
}

TEST_F(SliceSyncTest, WatchErrorsBackOffAndTheWatchComesBack) {
  server_.AnswerNext("GET /apis/resource.k8s.io/v1/resourceslices?watch=true", 500,
                     R"({"kind":"Status","code":500,"message":"etcd leader changed"})", 3);
  ASSERT_NO_FATAL_FAILURE(RunAndWaitForTheWatch());
  EXPECT_GE(sync_->watch_relists(), 3);
  ASSERT_EQ(server_.DeleteSlices("node1"), 1);
  EXPECT_TRUE(WaitUntil([&] { return Published().size() == 2u; }));
}

TEST_F(SliceSyncTest, AKubeletRegistrationTriggersAPublishThatRestoresDeletedSlices) {
  Run(Options(/*watch=*/false));
  ASSERT_TRUE(WaitUntil([&] { return sync_->publishes() >= 1; }));
  ASSERT_EQ(server_.DeleteSlices("node1"), 1);
  sync_->Trigger("kubelet registered the driver");
  EXPECT_TRUE(WaitUntil([&] { return Published().size() == 2u; }));
}

TEST_F(SliceSyncTest, WithoutAWatchThePeriodicResyncRestoresDeletedSlices) {
  SliceSyncOptions o = Options(/*watch=*/false);
  o.resync_interval = std::chrono::milliseconds(20);
  Run(o);
  ASSERT_TRUE(WaitUntil([&] { return sync_->publishes() >= 1; }));
  ASSERT_EQ(server_.DeleteSlices("node1"), 1);
  EXPECT_TRUE(WaitUntil([&] { return Published().size() == 2u; }));
}

TEST_F(SliceSyncTest, ANodeRecreatedWithANewUidOwnsTheRepublishedSlices) {
  ASSERT_NO_FATAL_FAILURE(RunAndWaitForTheWatch());
  ASSERT_EQ(OwnerUids(), std::vector<std::string>{"node-uid-1"});
  server_.AddNode("node1", "node-uid-2");  // deleted and re-created: the GC deletes our slice
  EXPECT_TRUE(WaitUntil([&] { return OwnerUids() == std::vector<std::string>{"node-uid-2"}; }))
      << "owners now: " << json(OwnerUids()).dump();
}

TEST_F(SliceSyncTest, MalformedAnswersAreFailedPublishesNotTheEndOfTheLoop) {
  for (const char* body : {R"({"items":[],"metadata":{"continue":7}})", "[]", R"("str")"}) {
    server_.AnswerNext("GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector", 200, body);
  }
  server_.AnswerNext("GET /api/v1/nodes/node1", 200, R"({"metadata":"x"})");
  Run(Options());
  ASSERT_TRUE(WaitUntil([&] { return sync_->publishes() >= 1; }));
  EXPECT_EQ(Published().size(), 2u);
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_GE(results_.size(), 5u);
  EXPECT_NE(results_[0].message().find("$.metadata.continue: not a string"), std::string::npos) << results_[0].message();
  EXPECT_NE(results_[1].message().find("$: not an object (array)"), std::string::npos) << results_[1].message();
  EXPECT_NE(results_[2].message().find("$: not an object (string)"), std::string::npos) << results_[2].message();
  EXPECT_NE(results_[3].message().find("$.metadata: not an object (string)"), std::string::npos) << results_[3].message();
}

TEST_F(SliceSyncTest, AMalformedWatchEventIsAWatchErrorNotTheEndOfTheDriver) {
  server_.AnswerNext("GET /apis/resource.k8s.io/v1/resourceslices?watch=true", 200,
                     "{\"type\":\"DELETED\",\"object\":{\"metadata\":\"x\"}}\n[]\n", 2);
  ASSERT_NO_FATAL_FAILURE(RunAndWaitForTheWatch());
  EXPECT_GE(sync_->watch_relists(), 2);
  ASSERT_EQ(server_.DeleteSlices("node1"), 1);
  EXPECT_TRUE(WaitUntil([&] { return Published().size() == 2u; }));
}

// A flapping port: 21 changes of mlx5_1's health in a row, ending down. With a window no test outlasts, the
// slices say at most max_changes of them (each would be a write, a scheduler and an eviction
// controller reaction), and the ones past the bound are held and counted.
TEST_F(SliceSyncTest, AFlappingPortChangesTheSlicesAtMostTheBoundAWindow) {
  SliceSyncOptions o = Options(/*watch=*/false);
  o.health_changes = {.max_changes = 2, .window = std::chrono::hours(1)};
  Run(o);
  ASSERT_TRUE(WaitUntil([&] { return sync_->publishes() >= 1 && Published().size() == 2u; }));
  const int puts_before = server_.CountRequests("PUT");
  for (int i = 1; i <= 21; ++i) {
    SetDevices(/*mlx5_1_healthy=*/i % 2 == 0);
    const uint64_t g = catalog_.generation();
    ASSERT_TRUE(WaitUntil([&] { return sync_->published_generation() >= g; })) << "flap " << i;
  }
  // The last flap (down) is held: the slices still say the health of the second change (up).
  EXPECT_FALSE(Tainted("mlx5-1"));
  EXPECT_LE(server_.CountRequests("PUT") - puts_before, 2);
  const SliceHealthCounts c = sync_->health_counts();
  EXPECT_EQ(c.changes_let_through, 2u);
  EXPECT_GE(c.changes_held, 1u);
  EXPECT_EQ(c.held_devices, 1);
}

// ... and the health it held goes out when the window allows, with no other event to wake it.
TEST_F(SliceSyncTest, AHeldHealthChangeIsPublishedWhenTheWindowAllows) {
  SliceSyncOptions o = Options(/*watch=*/false);
  o.health_changes = {.max_changes = 1, .window = std::chrono::milliseconds(300)};
  Run(o);
  ASSERT_TRUE(WaitUntil([&] { return sync_->publishes() >= 1 && Published().size() == 2u; }));
  SetDevices(false);
  ASSERT_TRUE(WaitUntil([&] { return Tainted("mlx5-1"); }));
  SetDevices(true);  // within the window: held, then published at its end
  // The slice changes during the publish, the counts right after it: wait for both.
  EXPECT_TRUE(WaitUntil([&] { return !Tainted("mlx5-1") && sync_->health_counts().held_devices == 0; }))
      << "tainted " << Tainted("mlx5-1") << ", held " << sync_->health_counts().held_devices;
}

TEST(CatalogDeviceInputsTest, UnhealthyDevicesCarryTheCatalogsReason) {
  DeviceCatalog catalog("node1");
  catalog.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {false, "port 1 state DOWN"}, node::Presence::kPresent}}});
  auto in = CatalogDeviceInputs(catalog.All());
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].device.name, "mlx5_0");
  EXPECT_FALSE(in[0].healthy);
  EXPECT_EQ(in[0].unhealthy_reason, "port 1 state DOWN");
}

}  // namespace
}  // namespace rdmak8s::dra
