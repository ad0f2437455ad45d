// The CNI's view of a node's (or a pod's) sysfs through DeviceLookup: IDs, netdevs, the PF
// netdev. Its GID table reads are rdmak8s/gid_table.h's (tests/unit/common/gid_table_test.cc).
#include "rdmak8s/device_lookup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cni_test_util.h"
#include "support/sysfs_builder.h"

namespace rdmak8s::cni {
namespace {

DeviceLookup Fixture(const std::string& name) {
  return DeviceLookup(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name);
}

TEST(CniDeviceLookupTest, ResolvesDeviceIdByRdmaNamePciAddressAndAuxName) {
  auto s = Fixture("mlx5_roce_sriov");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_1"), "mlx5_1");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.2"), "mlx5_1");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.0"), "mlx5_0");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_core.sf.2"), "mlx5_3");
}

// What Multus hands every plugin of the chain as deviceID is the ID kubelet allocated from the
// device plugin: "<rdma_dev>-<k>" for a shared pool.
TEST(CniDeviceLookupTest, ResolvesASharedPoolsDeviceIdToItsRdmaDevice) {
  auto s = Fixture("mlx5_roce_sriov");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_0-0"), "mlx5_0");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_3-17"), "mlx5_3");
  EXPECT_EQ(*Fixture("rxe_veth").ResolveDeviceId("rxe0-3"), "rxe0");
  // Only a numeric suffix after an existing device counts.
  EXPECT_EQ(s.ResolveDeviceId("mlx5_9-0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ResolveDeviceId("mlx5_0-x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ResolveDeviceId("mlx5_0-").status().code(), StatusCode::kNotFound);
}

TEST(CniDeviceLookupTest, UnknownOrMalformedDeviceIdIsAClearError) {
  auto s = Fixture("mlx5_roce_sriov");
  auto r = s.ResolveDeviceId("0000:99:00.0");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("0000:99:00.0"), std::string::npos);
  EXPECT_EQ(s.ResolveDeviceId("../x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Fixture("no_rdma").ResolveDeviceId("mlx5_0").status().code(), StatusCode::kNotFound);
}

TEST(CniDeviceLookupTest, ResolvesNetdevsIncludingStackedAndSoftDevices) {
  auto s = Fixture("mlx5_roce_sriov");
  uint32_t port = 0;
  EXPECT_EQ(*s.ResolveByNetdev("ens1f0v0", &port), "mlx5_1");
  EXPECT_EQ(*s.ResolveByNetdev("ens1f0np0", &port), "mlx5_0");
  EXPECT_EQ(port, 1u);
  EXPECT_EQ(*s.ResolveByNetdev("ens1f0np0.100", &port), "mlx5_0") << "VLAN follows lower_*";
  EXPECT_EQ(*s.ResolveByNetdev("enp94s0f0s2", &port), "mlx5_3");
  EXPECT_EQ(*Fixture("rxe_veth").ResolveByNetdev("veth0", &port), "rxe0");
  EXPECT_EQ(s.ResolveByNetdev("nosuch", &port).status().code(), StatusCode::kNotFound);
  uint32_t p2 = 0;
  EXPECT_EQ(*Fixture("mlx5_ib_2port").ResolveByNetdev("ib1", &p2), "mlx5_0");
  EXPECT_EQ(p2, 2u) << "dev_port 1 is port 2";
}

TEST(CniDeviceLookupTest, FindsSoftRoceOverAVirtioNicByItsParentNetdev) {
  // rxe over a PCI virtio NIC: the netdev has a `device` link, but no RDMA device sits on that
  // PCI function; rxe names the netdev in its `parent` attribute.
  testing::TempDir tmp;
  rdmak8s::testing::SysfsBuilder b(tmp.path());
  rdmak8s::testing::PciFunctionSpec nic;
  nic.address = "0000:00:03.0";
  nic.root_port = "";
  nic.vendor = 0x1af4;
  nic.device = 0x1041;
  nic.driver = "virtio-pci";
  ASSERT_TRUE(b.AddPciFunction(nic).ok());
  rdmak8s::testing::NetdevSpec ens3;
  ens3.name = "ens3";
  ens3.parent_name = "0000:00:03.0";
  ASSERT_TRUE(b.AddNetdev(ens3).ok());
  rdmak8s::testing::RdmaDeviceSpec rxe;
  rxe.name = "rxe0";
  rxe.parent = rdmak8s::testing::RdmaParent::kVirtual;
  rxe.parent_attr = "ens3";
  rdmak8s::testing::PortSpec port;
  port.link_layer = "Ethernet";
  rxe.ports = {port};
  ASSERT_TRUE(b.AddRdmaDevice(rxe).ok());
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  uint32_t p = 0;
  auto r = DeviceLookup(tmp.path()).ResolveByNetdev("ens3", &p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "rxe0");
}

TEST(CniDeviceLookupTest, SeveralRdmaDevicesOnOneBusDeviceIsAnErrorListingThem) {
  testing::TempDir tmp;
  rdmak8s::testing::SysfsBuilder b(tmp.path());
  rdmak8s::testing::PciFunctionSpec nic;
  nic.address = "0000:3b:00.0";
  ASSERT_TRUE(b.AddPciFunction(nic).ok());
  for (auto name : {"mlx5_0", "mlx5_7"}) {
    rdmak8s::testing::RdmaDeviceSpec d;
    d.name = name;
    d.parent_name = "0000:3b:00.0";
    d.ports = {rdmak8s::testing::PortSpec{}};
    ASSERT_TRUE(b.AddRdmaDevice(d).ok());
  }
  auto r = DeviceLookup(tmp.path()).ResolveDeviceId("0000:3b:00.0");
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("mlx5_0, mlx5_7"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("deviceID"), std::string::npos) << r.status().message();
}

TEST(CniDeviceLookupTest, PfNetdevOfVfSfAndPf) {
  auto s = Fixture("mlx5_roce_sriov");
  for (std::string dev : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) {
    auto d = s.ReadDevice(dev);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto pf = s.PfNetdev(*d);
    ASSERT_TRUE(pf.ok()) << dev << ": " << pf.status().ToString();
    EXPECT_EQ(*pf, "ens1f0np0") << dev;
  }
  auto rxe = Fixture("rxe_veth");
  EXPECT_EQ(*rxe.PfNetdev(*rxe.ReadDevice("rxe0")), "veth0");
}

TEST(CniDeviceLookupTest, ReadsTransportPortsAndPkeys) {
  auto s = Fixture("mlx5_roce_sriov");
  auto d = s.ReadDevice("mlx5_1");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->transport, Transport::kRoce);
  EXPECT_EQ(d->bus_device_id(), "0000:5e:00.2");
  EXPECT_EQ(Fixture("irdma_iwarp").ReadDevice(*Fixture("irdma_iwarp").ListDevices()->begin())->transport,
            Transport::kIwarp);
  auto ib = Fixture("mlx5_ib_2port");
  EXPECT_EQ(ib.ReadDevice("mlx5_0")->transport, Transport::kIb);
  EXPECT_EQ(*ib.ReadPortState("mlx5_0", 1), PortState::kActive);
  EXPECT_EQ(*ib.ReadPortState("mlx5_0", 2), PortState::kDown);
  auto pkeys = ib.ReadPkeys("mlx5_0", 1);
  ASSERT_TRUE(pkeys.ok());
  EXPECT_FALSE(pkeys->empty());
}

// A copy of a fixture with the test world around it (netns-tagged views).
class CniDeviceLookupWorldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = tmp_.path() + "/node";
    ASSERT_TRUE(testing::CopyFixture("mlx5_roce_sriov", node_));
    world_ = std::make_unique<rdmak8s::testing::NetnsSysfs>("node", node_, tmp_.path() + "/views");
  }
  std::string gids(const std::string& dev) { return node_ + "/class/infiniband/" + dev + "/ports/1/"; }
  testing::TempDir tmp_;
  std::string node_;
  std::unique_ptr<rdmak8s::testing::NetnsSysfs> world_;
};

TEST_F(CniDeviceLookupWorldTest, ADeviceInAPodResolvesInThePodsViewAndIsHiddenFromTheNodes) {
  ASSERT_TRUE(world_->MoveRdmaDevice("mlx5_1", "pod").ok());
  auto pod_root = world_->RootOf("pod");
  ASSERT_TRUE(pod_root.ok());
  DeviceLookup node(node_), pod(*pod_root);
  for (const std::string id : {"mlx5_1", "0000:5e:00.2", "mlx5_1-3"}) {
    SCOPED_TRACE(id);
    EXPECT_EQ(node.ResolveDeviceId(id).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(*pod.ResolveDeviceId(id), "mlx5_1");
    EXPECT_EQ(*node.ResolveHiddenDeviceId(id), "mlx5_1") << "its uverbs device is on the node";
  }
  EXPECT_EQ(node.ResolveHiddenDeviceId("mlx5_0").status().code(), StatusCode::kNotFound)
      << "shown, so not hidden";
  EXPECT_EQ(node.ResolveHiddenDeviceId("mlx5_9").status().code(), StatusCode::kNotFound);
  auto d = pod.ReadDevice("mlx5_1");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bus_device_id(), "0000:5e:00.2");
  EXPECT_EQ(*node.PfNetdev(*d), "ens1f0np0") << "the PF netdev is the node's, read in its view";
}

TEST_F(CniDeviceLookupWorldTest, LinksResolveInsideTheTreeUnderAProcFdRoot) {
  // The pod's view is reached through /proc/self/fd/<fd> (sysfs_view.h): realpath(3) would
  // leave the tree there.
  int fd = open(node_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  DeviceLookup s("/proc/self/fd/" + std::to_string(fd));
  auto d = s.ReadDevice("mlx5_3");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bus_device_id(), "mlx5_core.sf.2");
  EXPECT_EQ(d->parent_rel, "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/mlx5_core.sf.2");
  EXPECT_EQ(*s.PfNetdev(*d), "ens1f0np0");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.3"), "mlx5_2");
  close(fd);
}

}  // namespace
}  // namespace rdmak8s::cni
