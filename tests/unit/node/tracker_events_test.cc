// What each batch of node events (node/tracker_events.h) does to a DeviceTracker over a copy of a
// kernel-shaped sysfs fixture, and what it tells the caller to do next (changed, devices_reread,
// rescan): link events, the port poll, uevents, verbs async events, and their sources failing.
#include "node/tracker_events.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "unit/device-plugin/fake_event_sources.h"
#include "unit/node/tracker_fixture.h"

namespace rdmak8s::node {
namespace {

namespace fs = std::filesystem;

// A source whose read fails as the kernel's socket does after an overrun (ENOBUFS).
class OverrunLinks final : public LinkMonitor {
 public:
  int fd() const override { return -1; }
  Status ReadEvents(const std::function<void(const LinkEvent&)>&) override {
    return ErrnoError(ENOBUFS, "recv link events");
  }
};
class OverrunDeviceEvents final : public DeviceEventSource {
 public:
  int fd() const override { return -1; }
  Status ReadEvents(const std::function<void(const DeviceEvent&)>&) override {
    return ErrnoError(ENOBUFS, "recv uevents");
  }
  Status Watch(const std::vector<std::string>&) override { return Status::Ok(); }
};

class TrackerEventsTest : public TrackerFixture {
 protected:
  // The fixture's devices, scanned.
  void StartOn(const std::string& name) {
    UseFixture(name);
    ASSERT_TRUE(tracker_->Rescan().ok());
  }

  dp::FakeLinkMonitor links_;
  dp::FakeDeviceEventSource events_;
};

TEST_F(TrackerEventsTest, ALinkEventOnATrackedNetdevReReadsItsPortsOnly) {
  StartOn("rxe_veth");
  ASSERT_TRUE(At("rxe0").health.healthy);
  Write("class/net/veth0/operstate", "down\n");
  links_.Inject("veth0", false);
  TrackerEventOutcome o = ApplyLinkEvents(*tracker_, links_);
  EXPECT_TRUE(o.changed);
  EXPECT_FALSE(o.devices_reread) << "a link event changes ports, not the device's shape";
  EXPECT_FALSE(o.rescan);
  EXPECT_FALSE(At("rxe0").health.healthy);
}

TEST_F(TrackerEventsTest, ALinkEventOnANetdevWithoutRdmaChangesNothing) {
  StartOn("rxe_veth");
  links_.Inject("vethpod0", true);  // a pod's veth: no bus device, no lower netdev
  TrackerEventOutcome o = ApplyLinkEvents(*tracker_, links_);
  EXPECT_FALSE(o.changed);
  EXPECT_FALSE(o.devices_reread);
  EXPECT_FALSE(o.rescan);
}

TEST_F(TrackerEventsTest, LostLinkEventsAskForARescanAndApplyNothing) {
  StartOn("rxe_veth");
  OverrunLinks lost;
  TrackerEventOutcome o = ApplyLinkEvents(*tracker_, lost);
  EXPECT_TRUE(o.rescan);
  EXPECT_FALSE(o.changed);
}

TEST_F(TrackerEventsTest, ThePortPollReportsAChangeOnlyWhenAPortMoved) {
  StartOn("mlx5_ib_2port");
  TrackerEventOutcome same = PollPortStates(*tracker_);
  EXPECT_FALSE(same.changed) << "nothing moved";
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  TrackerEventOutcome down = PollPortStates(*tracker_);
  EXPECT_TRUE(down.changed);
  EXPECT_FALSE(down.devices_reread);
  EXPECT_FALSE(At("mlx5_0").health.healthy);
}

TEST_F(TrackerEventsTest, AnUnregisteredUeventMakesTheDeviceGoneAndSaysDevicesWereReRead) {
  StartOn("rxe_veth");
  fs::remove(sys("class/infiniband/rxe0"));
  events_.Inject({"rxe0", 0, "unregistered"});
  TrackerEventOutcome o = ApplyUevents(*tracker_, events_);
  EXPECT_TRUE(o.changed);
  EXPECT_TRUE(o.devices_reread);
  EXPECT_EQ(At("rxe0").presence, Presence::kGone);
  EXPECT_TRUE(tracker_->Present().empty());
}

TEST_F(TrackerEventsTest, LostUeventsAskForARescan) {
  StartOn("rxe_veth");
  OverrunDeviceEvents lost;
  TrackerEventOutcome o = ApplyUevents(*tracker_, lost);
  EXPECT_TRUE(o.rescan);
  EXPECT_FALSE(o.changed);
}

TEST_F(TrackerEventsTest, AsyncEventsNameTheirDevicesOnceAndAFatalOneAsksForARescan) {
  events_.InjectBatch(
      {{"mlx5_0", 1, "port error"}, {"mlx5_0", 2, "port error"}, {"mlx5_1", 1, "port active"}});
  AsyncEventsOutcome o = ReadAsyncEvents(events_);
  EXPECT_EQ(o.devices, (std::set<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_FALSE(o.rescan);

  events_.Inject({"mlx5_0", 0, "device fatal"});
  EXPECT_TRUE(ReadAsyncEvents(events_).rescan);
  events_.Inject({"mlx5_0", 0, "local catastrophic error"});
  EXPECT_TRUE(ReadAsyncEvents(events_).rescan);
}

}  // namespace
}  // namespace rdmak8s::node
