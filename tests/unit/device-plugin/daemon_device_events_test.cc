// Device events through the daemon (device_tracker.h): link events, verbs async events, uevents
// and the periodic rescan turning into health changes, hot-plug and devices moved into pods,
// each re-reading no more than it must.
#include <gtest/gtest.h>

#include "unit/device-plugin/daemon_fixture.h"

namespace rdmak8s::dp {
namespace {

using namespace daemon_test;

TEST_F(DaemonTest, PortDownThroughLinkEventFlipsHealthAndBack) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
  WriteFile(sys("class/net/veth0/operstate"), "down\n");
  links_->Inject("veth0", false);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Unhealthy"; }));
  WriteFile(sys("class/net/veth0/operstate"), "up\n");
  links_->Inject("veth0", true);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
}

TEST_F(DaemonTest, PortErrorAsyncEventFlipsHealth) {
  UseFixture("mlx5_ib_2port");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Healthy"; }));
  EXPECT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
  WriteFile(sys("class/infiniband/mlx5_0/ports/1/state"), "1: DOWN\n");
  events_->Inject({"mlx5_0", 1, "port error"});
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Unhealthy"; }));
  WriteFile(sys("class/infiniband/mlx5_0/ports/1/state"), "4: ACTIVE\n");
  events_->Inject({"mlx5_0", 1, "port active"});
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Healthy"; }));
}

// Issue 24 item 13: an InfiniBand port that goes down raises no netdev event, and without verbs
// (the default deployment) no async event either: the port poll sees it, and the way back up.
TEST_F(DaemonTest, PortDownWithoutAnyEventIsSeenByThePortPoll) {
  UseFixture("mlx5_ib_2port");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  options_.port_poll_interval = 20ms;
  options_.rescan_interval = std::chrono::hours(1);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Healthy"; }));
  const int full_reads = discovery_->all();
  WriteFile(sys("class/infiniband/mlx5_0/ports/1/state"), "1: DOWN\n");
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Unhealthy"; }))
      << "no ListAndWatch update for a port that went down without an event";
  WriteFile(sys("class/infiniband/mlx5_0/ports/1/state"), "4: ACTIVE\n");
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Healthy"; }));
  EXPECT_EQ(discovery_->all(), full_reads) << "the poll reads port state, not a full rescan";
  EXPECT_TRUE(discovery_->one().empty()) << "the poll re-read a whole device";
}

TEST_F(DaemonTest, VanishedDeviceTurnsUnhealthyAndHotPluggedDeviceIsAdded) {
  UseFixture("mlx5_roce_sriov");
  // mlx5_2 is "not plugged in" at start.
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2"}; }));

  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  links_->Inject("ens1f0v1", true);  // a netdev the plugin does not know: rescan
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"} &&
           HealthOf(r, "0000:5e:00.3") == "Healthy";
  }));

  // Hot-unplugged: the VF's bus device goes with it.
  fs::rename(sys("class/infiniband/mlx5_1"), root_ + "/mlx5_1.link");
  fs::rename(sys("bus/pci/devices/0000:5e:00.2"), root_ + "/vf.link");
  links_->Inject("ens1f0v0", false, LinkEvent::Type::kDel);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));

  // It comes back (VF re-created, driver re-bound): Healthy again, same ID.
  fs::rename(root_ + "/vf.link", sys("bus/pci/devices/0000:5e:00.2"));
  fs::rename(root_ + "/mlx5_1.link", sys("class/infiniband/mlx5_1"));
  links_->Inject("ens1f0v0", true);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"} && HealthOf(r, "0000:5e:00.2") == "Healthy";
  }));
}

// RDMA netns mode exclusive: our CNI moved the VF's RDMA device (and sriov-cni its netdev) into a
// pod; the node no longer shows either, as the kernel hides them. A pod holds the device: it must
// stay Healthy (allocatable, and the pod's own status), whatever event makes the daemon look.
TEST_F(DaemonTest, DeviceMovedIntoAPodStaysHealthyAndIsReReadWhenItComesHome) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Healthy"; }));
  testing::NodeSysfs node(root_ + "/sys", root_ + "/pod");
  ASSERT_TRUE(node.MoveToPod("mlx5_1", {"ens1f0v0"}));
  links_->Inject("ens1f0v0", false, LinkEvent::Type::kDel);  // the netdev left the node
  events_->Inject({"mlx5_1", 0, "device fatal"});           // the move disassociates our context
  // A port going down elsewhere, on the same event source: the marker that the fatal event was
  // handled (both are read in one go, and a fatal event re-reads every device).
  WriteFile(sys("class/infiniband/mlx5_2/ports/1/state"), "1: DOWN\n");
  events_->Inject({"mlx5_2", 1, "port error"});
  auto r = WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.3") == "Unhealthy"; });
  ASSERT_TRUE(r);
  EXPECT_EQ(Ids(*r), (std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"}));
  EXPECT_EQ(HealthOf(*r, "0000:5e:00.2"), "Healthy");
  auto a = kubelet_->Allocate("rdma/vfs", {{"0000:5e:00.2"}});
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(events_->watched(), (std::vector<std::string>{"mlx5_0", "mlx5_2", "mlx5_3"}));

  // Back home (DEL), with its port down meanwhile: re-read, so kubelet sees what it is now.
  std::ofstream(node.InPod("class/infiniband/mlx5_1") + "/ports/1/state") << "1: DOWN\n";
  ASSERT_TRUE(node.ComeHome("mlx5_1", {"ens1f0v0"}));
  links_->Inject("ens1f0v0", true);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));
}

// A soft device has no bus device: moved into the pod it stays Healthy too.
TEST_F(DaemonTest, SoftDeviceMovedIntoAPodStaysHealthy) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
  testing::NodeSysfs node(root_ + "/sys", root_ + "/pod");
  ASSERT_TRUE(node.MoveToPod("rxe0"));
  daemon_->Rescan();
  // The marker: veth0 going down is still seen on the node (the device is judged by it).
  WriteFile(sys("class/net/veth0/operstate"), "down\n");
  links_->Inject("veth0", false);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Unhealthy"; }));
  WriteFile(sys("class/net/veth0/operstate"), "up\n");
  links_->Inject("veth0", true);
  auto r = WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; });
  ASSERT_TRUE(r);
  EXPECT_EQ(Ids(*r), std::vector<std::string>{"rxe0"});
}

// A port attribute that is not "<n>: <name>" (here a number no int holds) is an error handled on
// the event loop: the device turns Unhealthy ("unreadable") and the loop goes on.
TEST_F(DaemonTest, MalformedPortStateOnALinkEventMakesTheDeviceUnreadableNotTheLoopDie) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
  WriteFile(sys("class/infiniband/rxe0/ports/1/state"), "99999999999999999999: ACTIVE\n");
  links_->Inject("veth0", true);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Unhealthy"; }));
  WriteFile(sys("class/infiniband/rxe0/ports/1/state"), "4: ACTIVE\n");
  links_->Inject("veth0", true);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
}

// Every pod's veth shows up as a new netdev on the node: one we don't own must not cost a full
// rescan (nor reopen every verbs context).
TEST_F(DaemonTest, NewNetdevWithoutAnRdmaDeviceCostsNoRescan) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; }));
  const int rescans = discovery_->all(), watches = events_->watch_calls();
  links_->Inject("veth3a9f1c2e", true);  // no such netdev in sysfs any more, or no RDMA under it
  links_->Inject("lo", true);            // exists, no bus device
  // The marker, on the same event source: a port of a known device goes down.
  WriteFile(sys("class/infiniband/mlx5_1/ports/1/state"), "1: DOWN\n");
  links_->Inject("ens1f0v0", false);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));
  EXPECT_EQ(discovery_->all(), rescans);
  EXPECT_EQ(events_->watch_calls(), watches);
}

// A new netdev that does carry an RDMA device (a VF's netdev appearing): only that device is read.
TEST_F(DaemonTest, NewNetdevWithAnRdmaDeviceReadsOnlyThatDevice) {
  UseFixture("mlx5_roce_sriov");
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 1; }));
  const int rescans = discovery_->all();
  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  links_->Inject("ens1f0v1", true);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return r.devices_size() == 2 && HealthOf(r, "0000:5e:00.3") == "Healthy";
  }));
  EXPECT_EQ(discovery_->all(), rescans);
  EXPECT_EQ(discovery_->one(), std::vector<std::string>{"mlx5_2"});
  // Its async events are listened to as well.
  for (auto until = std::chrono::steady_clock::now() + kWait;
       events_->watched().size() != 4 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(events_->watched(), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
}

TEST_F(DaemonTest, PeriodicRescanFindsWhatNoEventReported) {
  UseFixture("mlx5_roce_sriov");
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  options_.rescan_interval = 1s;
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2"}; }));
  // No event at all: only the safety-net rescan can see these.
  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"}; }));
  WriteFile(sys("class/infiniband/mlx5_1/ports/1/state"), "1: DOWN\n");
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));
}

// `rdma link add` on an existing netdev, or an RDMA driver loaded after its netdev: no link event,
// only the kernel's uevent for the infiniband device (bytes as the kernel sends them).
TEST_F(DaemonTest, RdmaDeviceRegisteredWithoutANewNetdevIsFoundThroughItsUevent) {
  UseFixture("mlx5_roce_sriov");
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
  uevent_fd_ = sv[0];
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2"}; }));

  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  std::string add =
      "add@/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.3/infiniband/mlx5_2\0ACTION=add\0"
      "DEVPATH=/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.3/infiniband/mlx5_2\0"
      "SUBSYSTEM=infiniband\0NAME=mlx5_2\0SEQNUM=1\0"s;
  ASSERT_EQ(write(sv[1], add.data(), add.size()), static_cast<ssize_t>(add.size()));
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"} && HealthOf(r, "0000:5e:00.3") == "Healthy";
  }));
  // Published first, then the new device's async events are listened to.
  const std::vector<std::string> all = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
  for (auto until = std::chrono::steady_clock::now() + kWait;
       events_->watched() != all && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(events_->watched(), all);

  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  std::string rm = "remove@/devices/virtual/infiniband/mlx5_2\0ACTION=remove\0SUBSYSTEM=infiniband\0NAME=mlx5_2\0"s;
  ASSERT_EQ(write(sv[1], rm.data(), rm.size()), static_cast<ssize_t>(rm.size()));
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.3") == "Unhealthy"; }));
  close(sv[1]);
}


// The device watch's decisions (node/device_watch.h), as the device plugin runs them; the DRA
// driver's health_watcher_test.cc shows the same for the driver.

// Two ports that went down together, told in one batch of verbs events: kubelet gets one
// update saying both, never one saying the first is down and the second still up.
TEST_F(DaemonTest, ABatchOfVerbsEventsIsPublishedOnce) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return HealthOf(r, "0000:5e:00.2") == "Healthy" && HealthOf(r, "0000:5e:00.3") == "Healthy";
  }));
  ASSERT_TRUE(WaitUntilReady());  // every stream open: nothing but the batch moves the count now
  const size_t before = kubelet_->UpdateCount("rdma/vfs");
  WriteFile(sys("class/infiniband/mlx5_1/ports/1/state"), "1: DOWN\n");
  WriteFile(sys("class/infiniband/mlx5_2/ports/1/state"), "1: DOWN\n");
  events_->InjectBatch({{"mlx5_1", 1, "port error"}, {"mlx5_2", 1, "port error"}});
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return HealthOf(r, "0000:5e:00.2") == "Unhealthy" && HealthOf(r, "0000:5e:00.3") == "Unhealthy";
  }));
  EXPECT_EQ(kubelet_->UpdateCount("rdma/vfs"), before + 1) << "one batch, more than one update";
}

// A verbs event whose re-read finds the device gone (hot-unplugged): the present devices changed,
// so the async events follow them, whatever source told it.
TEST_F(DaemonTest, AVerbsEventThatFindsTheDeviceGoneStopsWatchingIt) {
  UseFixture("mlx5_ib_2port");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Healthy"; }));
  ASSERT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
  fs::rename(sys("class/infiniband/mlx5_0"), root_ + "/mlx5_0.link");
  fs::rename(sys("bus/pci/devices/0000:3b:00.0"), root_ + "/hca.link");
  events_->Inject({"mlx5_0", 1, "port error"});
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Unhealthy"; }));
  // The watch is updated before the publish: what kubelet saw, the source already follows.
  EXPECT_TRUE(events_->watched().empty()) << "still listening on a device that is gone";
}

}  // namespace
}  // namespace rdmak8s::dp
