// DeviceWatch (node/device_watch.h) over a copy of a kernel-shaped sysfs fixture with in-memory
// link and verbs event sources: the decisions it makes once for both agents (a batch published
// once; the verbs re-watch following the present devices; a fatal event reopening them), its
// timers, and both faces (another loop's fds and wakeups; its own Run loop).
#include "node/device_watch.h"

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "support/test_dirs.h"
#include "unit/device-plugin/fake_event_sources.h"

namespace rdmak8s::node {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class DeviceWatchTest : public ::testing::Test {
 protected:
  void StartOn(const std::string& fixture, std::chrono::milliseconds port_poll = 0ms) {
    ASSERT_FALSE(tmp_.path().empty());
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + fixture, sys(""),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    DeviceSources sources;
    sources.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys(""), nullptr});
    auto links = std::make_unique<dp::FakeLinkMonitor>();
    auto events = std::make_unique<dp::FakeDeviceEventSource>();
    links_ = links.get();
    events_ = events.get();
    sources.links = std::move(links);
    sources.async_events = std::move(events);
    DeviceWatchHooks hooks;
    hooks.on_change = [this](const DeviceTracker&, bool rescanned) {
      ++changes_;
      if (rescanned) ++rescans_;
    };
    watch_ = std::make_unique<DeviceWatch>(
        std::move(sources), DeviceWatchOptions{sys(""), std::chrono::hours(1), port_poll},
        std::move(hooks));
    ASSERT_TRUE(watch_->Start().ok());
  }
  std::string sys(const std::string& rel) const { return tmp_.path() + "/sys/" + rel; }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(sys(rel)) << text; }
  const TrackedDevice& At(const std::string& dev) { return watch_->tracker().devices().at(dev); }

  testing::TempDir tmp_;
  dp::FakeLinkMonitor* links_ = nullptr;
  dp::FakeDeviceEventSource* events_ = nullptr;
  std::unique_ptr<DeviceWatch> watch_;
  int changes_ = 0;
  int rescans_ = 0;
};

TEST_F(DeviceWatchTest, StartPublishesARescanAndWatchesThePresentDevices) {
  StartOn("mlx5_ib_2port");
  EXPECT_EQ(changes_, 1);
  EXPECT_EQ(rescans_, 1);
  EXPECT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(watch_->fds(), (std::vector<int>{links_->fd(), events_->fd()}));
}

TEST_F(DeviceWatchTest, StartWithoutDiscoveryIsAnError) {
  DeviceWatch watch(DeviceSources{}, DeviceWatchOptions{}, DeviceWatchHooks{});
  Status s = watch.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

// Decision 1: a batch is applied whole, then published once.
TEST_F(DeviceWatchTest, ABatchOfVerbsEventsIsPublishedOnce) {
  StartOn("mlx5_roce_sriov");
  Write("class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
  Write("class/infiniband/mlx5_2/ports/1/state", "1: DOWN\n");
  events_->InjectBatch({{"mlx5_1", 1, "port error"}, {"mlx5_2", 1, "port error"}});
  const int before = changes_;
  ASSERT_TRUE(watch_->HandleReadable(events_->fd()));
  EXPECT_EQ(changes_, before + 1);
  EXPECT_FALSE(At("mlx5_1").health.healthy);
  EXPECT_FALSE(At("mlx5_2").health.healthy);
}

// Decision 2: the verbs events follow the present devices whatever changed them, a verbs event's
// own re-read included.
TEST_F(DeviceWatchTest, AVerbsEventThatFindsTheDeviceGoneStopsWatchingIt) {
  StartOn("mlx5_ib_2port");
  fs::rename(sys("class/infiniband/mlx5_0"), tmp_.path() + "/mlx5_0.link");
  fs::rename(sys("bus/pci/devices/0000:3b:00.0"), tmp_.path() + "/hca.link");
  events_->Inject({"mlx5_0", 1, "port error"});
  ASSERT_TRUE(watch_->HandleReadable(events_->fd()));
  EXPECT_EQ(At("mlx5_0").presence, Presence::kGone);
  EXPECT_TRUE(events_->watched().empty());
  EXPECT_EQ(events_->watch_calls(), 2);
}

TEST_F(DeviceWatchTest, AChangeThatLeavesThePresentDevicesAloneReopensNothing) {
  StartOn("mlx5_ib_2port");
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  events_->Inject({"mlx5_0", 1, "port error"});
  ASSERT_TRUE(watch_->HandleReadable(events_->fd()));
  EXPECT_FALSE(At("mlx5_0").health.healthy);
  EXPECT_EQ(events_->watch_calls(), 1);
}

TEST_F(DeviceWatchTest, AFatalVerbsEventRescansAndReopensEveryContext) {
  StartOn("mlx5_ib_2port");
  events_->Inject({"mlx5_0", 0, "device fatal"});
  ASSERT_TRUE(watch_->HandleReadable(events_->fd()));
  EXPECT_EQ(rescans_, 2);
  EXPECT_EQ(events_->watch_calls(), 2) << "the source dropped the context: reopened";
  EXPECT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
}

TEST_F(DeviceWatchTest, AnFdThatIsNotASourcesIsNotHandled) {
  StartOn("mlx5_ib_2port");
  EXPECT_FALSE(watch_->HandleReadable(-1));
  EXPECT_EQ(changes_, 1);
}

TEST_F(DeviceWatchTest, ThePortPollRunsWhenDueAndARescanRestartsIt) {
  StartOn("mlx5_ib_2port", 50ms);
  const auto poll_at = watch_->NextWakeup();
  EXPECT_LE(poll_at, DeviceWatch::Clock::now() + 50ms) << "the poll comes before the hour's rescan";
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  watch_->OnTimer(poll_at - 1ms);
  EXPECT_TRUE(At("mlx5_0").health.healthy) << "ran before it was due";
  watch_->OnTimer(poll_at);
  EXPECT_FALSE(At("mlx5_0").health.healthy);
  EXPECT_EQ(rescans_, 1) << "a poll is not a rescan";
  watch_->Rescan();
  EXPECT_EQ(rescans_, 2);
  EXPECT_GT(watch_->NextWakeup(), poll_at);
}

TEST_F(DeviceWatchTest, WithoutThePortPollTheRescanIsTheNextWakeup) {
  StartOn("mlx5_ib_2port");
  EXPECT_GT(watch_->NextWakeup(), DeviceWatch::Clock::now() + 30min);
  watch_->OnTimer(watch_->NextWakeup());
  EXPECT_EQ(rescans_, 2);
}

// Its own loop: events and a requested rescan are applied on Run's thread until Stop.
TEST(DeviceWatchRunTest, RunAppliesEventsAndARequestedRescanUntilStopped) {
  testing::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string sys = tmp.path() + "/sys";
  fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/rxe_veth", sys,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  DeviceSources sources;
  sources.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys, nullptr});
  auto links = std::make_unique<dp::FakeLinkMonitor>();
  dp::FakeLinkMonitor* link_ptr = links.get();
  sources.links = std::move(links);
  std::promise<void> unhealthy, rescanned;
  int wakeups = 0;
  DeviceWatchHooks hooks;
  bool saw_unhealthy = false;
  int rescans = 0;
  hooks.on_change = [&](const DeviceTracker& t, bool rescan) {
    if (rescan && ++rescans == 2) rescanned.set_value();
    if (!rescan && !saw_unhealthy && !t.devices().at("rxe0").health.healthy) {
      saw_unhealthy = true;
      unhealthy.set_value();
    }
  };
  hooks.on_wakeup = [&] { ++wakeups; };
  DeviceWatch watch(std::move(sources), DeviceWatchOptions{sys, std::chrono::hours(1), 0ms},
                    std::move(hooks));
  ASSERT_TRUE(watch.Start().ok());
  Status run_status;
  std::thread run([&] { run_status = watch.Run(); });
  std::ofstream(sys + "/class/net/veth0/operstate") << "down\n";
  link_ptr->Inject("veth0", false);
  EXPECT_EQ(unhealthy.get_future().wait_for(10s), std::future_status::ready);
  watch.RequestRescan();
  EXPECT_EQ(rescanned.get_future().wait_for(10s), std::future_status::ready);
  watch.Stop();
  run.join();
  EXPECT_TRUE(run_status.ok()) << run_status.ToString();
  EXPECT_GE(wakeups, 2);
}

}  // namespace
}  // namespace rdmak8s::node
