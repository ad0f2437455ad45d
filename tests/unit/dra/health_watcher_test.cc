// HealthWatcher over a kernel-shaped sysfs tree (a copy of a committed fixture) with in-memory
// link and verbs event sources: a port or netdev that changes state reaches the catalog (its
// generation moves, the device's health follows) and kubelet's health stream.
#include "dra/health_watcher.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "dra/kubelet/plugin.h"
#include "fakes/fake_claim_reader.h"
#include "fakes/fake_dra_kubelet.h"
#include "support/sysfs_builder.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"
#include "unit/device-plugin/fake_event_sources.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
constexpr auto kWait = std::chrono::seconds(10);
constexpr char kPool[] = "node-a";

class HealthWatcherTest : public ::testing::Test {
 protected:
  void StartOn(const std::string& fixture, DeviceFilter filter = {},
               std::chrono::milliseconds port_poll = std::chrono::milliseconds::zero()) {
    ASSERT_FALSE(tmp_.path().empty());
    sys_ = tmp_.path() + "/sys";
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + fixture, sys_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    node::DeviceSources deps;
    deps.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys_, nullptr});
    auto links = std::make_unique<dp::FakeLinkMonitor>();
    auto events = std::make_unique<dp::FakeDeviceEventSource>();
    links_ = links.get();
    events_ = events.get();
    deps.links = std::move(links);
    deps.async_events = std::move(events);
    // No periodic rescan within the test: only the events can make the change visible.
    watcher_ = std::make_unique<HealthWatcher>(
        std::move(deps), node::DeviceWatchOptions{sys_, std::chrono::hours(1), port_poll},
        std::move(filter), &catalog_);
    ASSERT_TRUE(watcher_->Start().ok());
    run_ = std::thread([this] { run_status_ = watcher_->Run(); });
  }
  void TearDown() override {
    if (plugin_) plugin_->Stop();
    if (watcher_) {
      watcher_->Stop();
      run_.join();
      EXPECT_TRUE(run_status_.ok()) << run_status_.ToString();
    }
  }
  // Whole, as the kernel shows an attribute: the watcher's thread polls it meanwhile.
  void Write(const std::string& rel, const std::string& text) {
    Status s = testing::WriteWhole(tmp_.path(), sys_ + "/" + rel, text);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Waits (bounded) for the catalog to move past `seen`; returns the device `device` then.
  std::optional<CatalogDevice> AfterChange(uint64_t seen, const std::string& device, bool healthy) {
    auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      seen = catalog_.WaitForChange(seen, deadline);
      auto d = catalog_.Find(kPool, device);
      if (d && d->health.healthy == healthy) return d;
    }
    return std::nullopt;
  }

  // Serves the catalog's health stream to a fake kubelet.
  void ServeHealth() {
    PreparerOptions p;
    p.state_dir = tmp_.path() + "/state";
    p.cdi_dir = tmp_.path() + "/cdi";
    p.pod_devices_dir = tmp_.path() + "/pods";
    fs::create_directories(p.cdi_dir);
    fs::create_directories(tmp_.path() + "/reg");
    auto prep = Preparer::Create(p, &reader_, &catalog_);
    ASSERT_TRUE(prep.ok());
    preparer_ = std::move(prep).value();
    plugin_ = std::make_unique<DraPlugin>(
        DraPluginOptions{p.driver_name, tmp_.path() + "/plugin", tmp_.path() + "/reg", {}}, preparer_.get(), &catalog_);
    ASSERT_TRUE(plugin_->Start().ok());
    ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  }
  static bool StreamSays(const v1alpha1::NodeWatchResourcesResponse& m, const std::string& device,
                         v1alpha1::HealthStatus h) {
    for (const auto& d : m.devices()) {
      if (d.device().device_name() == device) return d.health() == h;
    }
    return false;
  }

  testing::TempDir tmp_;
  std::string sys_;
  DeviceCatalog catalog_{kPool};
  dp::FakeLinkMonitor* links_ = nullptr;
  dp::FakeDeviceEventSource* events_ = nullptr;
  std::unique_ptr<HealthWatcher> watcher_;
  std::thread run_;
  Status run_status_;
  fake::FakeClaimReader reader_;
  std::unique_ptr<Preparer> preparer_;
  std::unique_ptr<DraPlugin> plugin_;
  fake::FakeDraKubelet kubelet_;
};

TEST_F(HealthWatcherTest, StartPublishesTheNodesDevicesHealthy) {
  StartOn("mlx5_ib_2port");
  auto d = catalog_.Find(kPool, "mlx5-0");
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->health.healthy) << d->health.reason;
  EXPECT_GT(catalog_.generation(), 0u);
  EXPECT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
}

TEST_F(HealthWatcherTest, OnlyTheDevicesTheFilterTakesReachTheCatalog) {
  auto vfs = DeviceFilter::Parse(R"({"selectors": {"isVF": true}})");
  ASSERT_TRUE(vfs.ok()) << vfs.status().ToString();
  StartOn("mlx5_roce_sriov", *vfs);
  std::vector<std::string> names;
  for (const auto& d : catalog_.All()) names.push_back(d.device);
  EXPECT_EQ(names, (std::vector<std::string>{"mlx5-1", "mlx5-2"}));  // the VFs; the PF and SF stay out
  EXPECT_FALSE(catalog_.Find(kPool, "mlx5-0").has_value());
}

TEST_F(HealthWatcherTest, PortErrorEventTurnsTheDeviceUnhealthyInCatalogAndHealthStream) {
  StartOn("mlx5_ib_2port");
  ServeHealth();
  ASSERT_TRUE(kubelet_.WaitForHealth([](const auto& m) { return StreamSays(m, "mlx5-0", v1alpha1::HEALTHY); }, kWait));
  uint64_t before = catalog_.generation();

  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  events_->Inject({"mlx5_0", 1, "port error"});
  auto down = AfterChange(before, "mlx5-0", false);
  ASSERT_TRUE(down.has_value());
  EXPECT_GT(catalog_.generation(), before);
  EXPECT_NE(down->health.reason.find("DOWN"), std::string::npos) << down->health.reason;
  EXPECT_TRUE(kubelet_.WaitForHealth([](const auto& m) { return StreamSays(m, "mlx5-0", v1alpha1::UNHEALTHY); }, kWait));

  uint64_t while_down = catalog_.generation();
  Write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  events_->Inject({"mlx5_0", 1, "port active"});
  ASSERT_TRUE(AfterChange(while_down, "mlx5-0", true).has_value());
  EXPECT_TRUE(kubelet_.WaitForHealth([](const auto& m) { return StreamSays(m, "mlx5-0", v1alpha1::HEALTHY); }, kWait));
}

TEST_F(HealthWatcherTest, NetdevDownLinkEventTurnsASoftRoceDeviceUnhealthy) {
  StartOn("rxe_veth");
  ASSERT_TRUE(catalog_.Find(kPool, "rxe0").has_value());
  uint64_t before = catalog_.generation();
  Write("class/net/veth0/operstate", "down\n");
  links_->Inject("veth0", false);
  auto down = AfterChange(before, "rxe0", false);
  ASSERT_TRUE(down.has_value());
  EXPECT_GT(catalog_.generation(), before);

  uint64_t while_down = catalog_.generation();
  Write("class/net/veth0/operstate", "up\n");
  links_->Inject("veth0", true);
  EXPECT_TRUE(AfterChange(while_down, "rxe0", true).has_value());
}

// An InfiniBand port that goes down with no event at all (no netdev, no verbs: the default
// deployment) is seen by the port poll, not at the rescan an hour away.
TEST_F(HealthWatcherTest, APortThatGoesDownWithoutAnyEventIsSeenByThePortPoll) {
  StartOn("mlx5_ib_2port", {}, std::chrono::milliseconds(20));
  uint64_t before = catalog_.generation();
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  auto down = AfterChange(before, "mlx5-0", false);
  ASSERT_TRUE(down.has_value()) << "the port poll did not see the port go down";
  EXPECT_NE(down->health.reason.find("DOWN"), std::string::npos) << down->health.reason;

  uint64_t while_down = catalog_.generation();
  Write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  EXPECT_TRUE(AfterChange(while_down, "mlx5-0", true).has_value());
}

// SIGHUP's rescan: a change no event and no poll reported reaches the catalog when asked.
TEST_F(HealthWatcherTest, ARequestedRescanSeesAChangeNoEventReported) {
  StartOn("mlx5_ib_2port");  // no port poll, the rescan an hour away
  uint64_t before = catalog_.generation();
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  watcher_->RequestRescan();
  ASSERT_TRUE(AfterChange(before, "mlx5-0", false).has_value()) << "the requested rescan did not run";
}

// The one device-watch rule (node/async_events_watch.h), as the device plugin's daemon follows it:
// a rescan that leaves the same devices present does not reopen every verbs context, a fatal
// event (the source dropped that device's context) does.
TEST_F(HealthWatcherTest, ARescanWithTheSameDevicesDoesNotReopenAsyncEventsButAFatalEventDoes) {
  StartOn("mlx5_ib_2port");
  ASSERT_EQ(events_->watch_calls(), 1);
  uint64_t before = catalog_.generation();
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  watcher_->RequestRescan();
  ASSERT_TRUE(AfterChange(before, "mlx5-0", false).has_value()) << "the requested rescan did not run";
  EXPECT_EQ(events_->watch_calls(), 1) << "a rescan with the same devices present reopened them";

  uint64_t while_down = catalog_.generation();
  Write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  events_->Inject({"mlx5_0", 0, "device fatal"});
  ASSERT_TRUE(AfterChange(while_down, "mlx5-0", true).has_value()) << "the fatal event's rescan did not run";
  EXPECT_EQ(events_->watch_calls(), 2) << "after a fatal event the device must be watched again";
  EXPECT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
}

// The device watch's decisions (node/device_watch.h), as the driver runs them; the device
// plugin's daemon_device_events_test.cc shows the same for the plugin.

// Two ports that went down together, told in one batch of verbs events: one catalog update
// saying both.
TEST_F(HealthWatcherTest, ABatchOfVerbsEventsIsPublishedOnce) {
  StartOn("mlx5_roce_sriov");
  ASSERT_TRUE(catalog_.Find(kPool, "mlx5-1").has_value());
  ASSERT_TRUE(catalog_.Find(kPool, "mlx5-2").has_value());
  const uint64_t before = catalog_.generation();
  Write("class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
  Write("class/infiniband/mlx5_2/ports/1/state", "1: DOWN\n");
  events_->InjectBatch({{"mlx5_1", 1, "port error"}, {"mlx5_2", 1, "port error"}});
  ASSERT_TRUE(AfterChange(before, "mlx5-2", false).has_value());
  auto first = catalog_.Find(kPool, "mlx5-1");
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->health.healthy);
  EXPECT_EQ(catalog_.generation(), before + 1) << "one batch, more than one update";
}

// A verbs event whose re-read finds the device gone (hot-unplugged): the present devices changed,
// so the async events follow them, whatever source told it.
TEST_F(HealthWatcherTest, AVerbsEventThatFindsTheDeviceGoneStopsWatchingIt) {
  StartOn("mlx5_ib_2port");
  ASSERT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
  const uint64_t before = catalog_.generation();
  fs::rename(sys_ + "/class/infiniband/mlx5_0", tmp_.path() + "/mlx5_0.link");
  fs::rename(sys_ + "/bus/pci/devices/0000:3b:00.0", tmp_.path() + "/hca.link");
  events_->Inject({"mlx5_0", 1, "port error"});
  ASSERT_NE(catalog_.WaitForChange(before, std::chrono::steady_clock::now() + kWait), before);
  // The watch is updated before the publish: what the catalog shows, the source already follows.
  EXPECT_TRUE(events_->watched().empty()) << "still listening on a device that is gone";
}

}  // namespace
}  // namespace rdmak8s::dra
