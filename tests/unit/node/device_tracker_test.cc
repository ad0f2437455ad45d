// DeviceTracker over the real SysfsDiscovery reading a copy of a fixture tree, changed in place
// the way the kernel changes /sys.
#include "node/device_tracker.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "unit/device-plugin/node_sysfs.h"
#include "unit/node/tracker_fixture.h"

namespace rdmak8s::node {
namespace {

namespace fs = std::filesystem;

class DeviceTrackerTest : public TrackerFixture {
 protected:
  testing::NodeSysfs node_{tmp_.path() + "/sys", tmp_.path() + "/pod"};
};

TEST_F(DeviceTrackerTest, RescanTracksEveryDeviceOfTheNodeWithItsHealth) {
  UseFixture("mlx5_ib_2port");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_EQ(tracker_->devices().size(), 1u);
  EXPECT_TRUE(At("mlx5_0").health.healthy) << "port 1 is ACTIVE, port 2 DOWN: one usable port";
  EXPECT_EQ(tracker_->Present(), std::vector<std::string>{"mlx5_0"});
}

TEST_F(DeviceTrackerTest, RefreshPortsFollowsPortStateWithoutAFullReRead) {
  UseFixture("mlx5_ib_2port");
  ASSERT_TRUE(tracker_->Rescan().ok());
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  ASSERT_TRUE(tracker_->RefreshPorts("mlx5_0").ok());
  EXPECT_FALSE(At("mlx5_0").health.healthy);
  EXPECT_NE(At("mlx5_0").health.reason.find("port 1 state DOWN"), std::string::npos)
      << At("mlx5_0").health.reason;
  Write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  ASSERT_TRUE(tracker_->RefreshPorts("mlx5_0").ok());
  EXPECT_TRUE(At("mlx5_0").health.healthy);
}

TEST_F(DeviceTrackerTest, NetdevDownMakesARoceDeviceUnhealthy) {
  UseFixture("rxe_veth");
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(tracker_->DevicesOnNetdev("veth0"), std::vector<std::string>{"rxe0"});
  Write("class/net/veth0/operstate", "down\n");
  tracker_->Refresh("rxe0");
  EXPECT_FALSE(At("rxe0").health.healthy);
  EXPECT_EQ(At("rxe0").health.reason, "port 1 netdev veth0 down");
}

TEST_F(DeviceTrackerTest, DeviceThatCannotBeReadIsUnhealthyAndKept) {
  UseFixture("mlx5_ib_2port");
  ASSERT_TRUE(tracker_->Rescan().ok());
  fs::remove(sys("class/infiniband/mlx5_0/node_type"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_EQ(tracker_->devices().count("mlx5_0"), 1u);
  EXPECT_FALSE(At("mlx5_0").health.healthy);
  EXPECT_EQ(At("mlx5_0").health.reason.rfind("unreadable: ", 0), 0u) << At("mlx5_0").health.reason;
}

TEST_F(DeviceTrackerTest, MalformedPortStateIsAnErrorNamingTheFileAndChangesNothing) {
  UseFixture("mlx5_ib_2port");
  ASSERT_TRUE(tracker_->Rescan().ok());
  for (const char* bad : {"99999999999999999999: ACTIVE\n", "ACTIVE\n", "x4: ACTIVE\n", ": ACTIVE\n"}) {
    Write("class/infiniband/mlx5_0/ports/1/state", bad);
    Status s = tracker_->RefreshPorts("mlx5_0");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad << s.ToString();
    EXPECT_NE(s.message().find("mlx5_0/ports/1/state"), std::string::npos) << s.message();
    EXPECT_TRUE(At("mlx5_0").health.healthy) << "left to the full re-read";
  }
  Write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  fs::remove(sys("class/infiniband/mlx5_0/ports/1/phys_state"));
  EXPECT_EQ(tracker_->RefreshPorts("mlx5_0").code(), StatusCode::kNotFound);
}

// mlx5_roce_sriov: VF 0000:5e:00.2 carries mlx5_1 on netdev ens1f0v0 (sriov-cni moves the
// netdev, our CNI the RDMA device).
TEST_F(DeviceTrackerTest, VfMovedIntoAPodStaysHealthyWhileItsBusDeviceStays) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("mlx5_1", {"ens1f0v0"}));
  ASSERT_FALSE(fs::exists(sys("devices/pci0000:5d/0000:5d:00.0/0000:5e:00.2/infiniband/mlx5_1")))
      << "the fixture hides what the kernel hides";
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_EQ(tracker_->devices().count("mlx5_1"), 1u);
  EXPECT_EQ(At("mlx5_1").presence, Presence::kInPod);
  EXPECT_TRUE(At("mlx5_1").health.healthy) << At("mlx5_1").health.reason;
  EXPECT_EQ(tracker_->Present(), (std::vector<std::string>{"mlx5_0", "mlx5_2", "mlx5_3"}))
      << "no verbs context on a device the node cannot see";
  // An event on it (its netdev left the node) re-reads it: still in the pod, still healthy.
  tracker_->Refresh("mlx5_1");
  EXPECT_EQ(At("mlx5_1").presence, Presence::kInPod);
  EXPECT_TRUE(At("mlx5_1").health.healthy);
  EXPECT_FALSE(tracker_->RefreshPorts("mlx5_1").ok()) << "its ports are the pod's to read";
}

TEST_F(DeviceTrackerTest, ScalableFunctionMovedIntoAPodStaysHealthy) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("mlx5_3"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(At("mlx5_3").presence, Presence::kInPod);
  EXPECT_TRUE(At("mlx5_3").health.healthy) << At("mlx5_3").health.reason;
}

TEST_F(DeviceTrackerTest, DeviceComingHomeIsReadAgain) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("mlx5_1", {"ens1f0v0"}));
  ASSERT_TRUE(tracker_->Rescan().ok());
  // Its port went down while in the pod: only a re-read at home can tell.
  std::ofstream(node_.InPod("class/infiniband/mlx5_1") + "/ports/1/state") << "1: DOWN\n";
  ASSERT_TRUE(node_.ComeHome("mlx5_1", {"ens1f0v0"}));
  tracker_->Refresh("mlx5_1");
  EXPECT_EQ(At("mlx5_1").presence, Presence::kPresent);
  EXPECT_FALSE(At("mlx5_1").health.healthy);
  EXPECT_EQ(tracker_->Present(), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
}

TEST_F(DeviceTrackerTest, DeviceInAPodWhoseBusDeviceDisappearsTurnsUnhealthy) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("mlx5_1", {"ens1f0v0"}));
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.RemoveBusDevice("bus/pci/devices/0000:5e:00.2"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(At("mlx5_1").presence, Presence::kGone);
  EXPECT_FALSE(At("mlx5_1").health.healthy);
  EXPECT_EQ(At("mlx5_1").health.reason, "bus device 0000:5e:00.2 gone");
}

TEST_F(DeviceTrackerTest, DeviceWhoseBusDeviceIsUnpluggedTurnsUnhealthy) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.RemoveBusDevice("bus/pci/devices/0000:5e:00.3"));
  fs::remove(sys("class/infiniband/mlx5_2"));
  tracker_->Refresh("mlx5_2");
  EXPECT_EQ(At("mlx5_2").presence, Presence::kGone);
  EXPECT_EQ(At("mlx5_2").health.reason, "bus device 0000:5e:00.3 gone");
}

TEST_F(DeviceTrackerTest, DeviceWhoseFunctionIsReboundToAnotherDriverIsForgotten) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("mlx5_1", {"ens1f0v0"}));
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_EQ(At("mlx5_1").presence, Presence::kInPod);
  ASSERT_TRUE(node_.Rebind("0000:5e:00.2", "vfio-pci"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(tracker_->devices().count("mlx5_1"), 0u);
}

// A VF re-created (or the device renamed) shows another RDMA device on the same function: the
// old one is gone for good, and must not linger beside its successor (two devices on one PCI
// address would make the exclusive pool advertise RDMA names instead of the PCI address).
TEST_F(DeviceTrackerTest, DeviceReplacedOnItsFunctionByAnotherIsForgotten) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  const std::string ib = "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.2/infiniband/";
  fs::rename(sys(ib + "mlx5_1"), sys(ib + "mlx5_7"));
  fs::remove(sys("class/infiniband/mlx5_1"));
  fs::create_directory_symlink("../../" + ib + "mlx5_7", sys("class/infiniband/mlx5_7"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(tracker_->devices().count("mlx5_1"), 0u);
  ASSERT_EQ(tracker_->devices().count("mlx5_7"), 1u);
  EXPECT_EQ(At("mlx5_7").dev.pci_address(), "0000:5e:00.2");
}

TEST_F(DeviceTrackerTest, DeviceInAPodReplacedOnItsFunctionIsForgotten) {
  UseFixture("mlx5_roce_sriov");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("mlx5_1", {"ens1f0v0"}));
  ASSERT_TRUE(tracker_->Rescan().ok());
  // The VF re-created while mlx5_1 sat in a pod: a new RDMA device on the same function.
  const std::string ib = "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.2/infiniband/";
  fs::copy(node_.InPod("class/infiniband/mlx5_1"), sys(ib + "mlx5_7"),
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::create_directory_symlink("../../" + ib + "mlx5_7", sys("class/infiniband/mlx5_7"));
  tracker_->Refresh("mlx5_1");
  EXPECT_EQ(tracker_->devices().count("mlx5_1"), 0u);
}

// rxe/siw have no bus device, and their netdev is in the pod (a netdev carrying one that changes
// namespace destroys it): nothing on the node tells a move from a removal inside the pod.
TEST_F(DeviceTrackerTest, SoftDeviceMovedIntoAPodStaysHealthy) {
  UseFixture("rxe_veth");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("rxe0"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(At("rxe0").presence, Presence::kInPod);
  EXPECT_TRUE(At("rxe0").health.healthy) << At("rxe0").health.reason;
  EXPECT_TRUE(tracker_->Present().empty());
}

// What the node does still show of a device in a pod counts: here its netdev stayed on the node.
TEST_F(DeviceTrackerTest, DeviceInAPodWhoseNetdevOnTheNodeGoesDownTurnsUnhealthy) {
  UseFixture("rxe_veth");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_TRUE(node_.MoveToPod("rxe0"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  Write("class/net/veth0/operstate", "down\n");
  tracker_->Refresh("rxe0");
  EXPECT_EQ(At("rxe0").presence, Presence::kInPod);
  EXPECT_EQ(At("rxe0").health.reason, "port 1 netdev veth0 down");
}

TEST_F(DeviceTrackerTest, DeviceUnregisteredOnTheNodeIsGoneNotInAPod) {
  UseFixture("rxe_veth");
  ASSERT_TRUE(tracker_->Rescan().ok());
  fs::remove(sys("class/infiniband/rxe0"));
  fs::remove_all(sys("devices/virtual/infiniband/rxe0"));
  tracker_->Unregistered("rxe0");
  EXPECT_EQ(At("rxe0").presence, Presence::kGone);
  EXPECT_FALSE(At("rxe0").health.healthy);
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(At("rxe0").presence, Presence::kGone) << "a rescan does not make it a pod's";
}

TEST_F(DeviceTrackerTest, RemoveUeventOfADeviceWhoseNetdevLeftTheNodeIsAMoveIntoAPod) {
  // The 7.3 kernel sends the node a "remove" uevent when it moves rxe into a pod's netns. Its
  // netdev is no longer on the node either (it went, or always was, in the pod): in a pod.
  UseFixture("rxe_veth");
  ASSERT_TRUE(tracker_->Rescan().ok());
  fs::remove(sys("class/infiniband/rxe0"));
  fs::remove_all(sys("devices/virtual/infiniband/rxe0"));
  fs::remove(sys("class/net/veth0"));
  tracker_->Unregistered("rxe0");
  EXPECT_EQ(At("rxe0").presence, Presence::kInPod);
  EXPECT_TRUE(At("rxe0").health.healthy) << At("rxe0").health.reason;
}

TEST_F(DeviceTrackerTest, UnregisteredButStillShownIsReRead) {
  UseFixture("rxe_veth");
  ASSERT_TRUE(tracker_->Rescan().ok());
  tracker_->Unregistered("rxe0");  // a rename onto the same name: "move" uevent
  EXPECT_EQ(At("rxe0").presence, Presence::kPresent);
  EXPECT_TRUE(At("rxe0").health.healthy);
}

}  // namespace
}  // namespace rdmak8s::node
