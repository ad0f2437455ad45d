#include "cni/rdma_sysfs.h"
#include "rdmak8s/roce_gid.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cni_test_util.h"
#include "support/sysfs_builder.h"

namespace rdmak8s::cni {
namespace {

RdmaSysfs Fixture(const std::string& name) {
  return RdmaSysfs(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name);
}

TEST(RdmaSysfsTest, ResolvesDeviceIdByRdmaNamePciAddressAndAuxName) {
  auto s = Fixture("mlx5_roce_sriov");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_1"), "mlx5_1");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.2"), "mlx5_1");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.0"), "mlx5_0");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_core.sf.2"), "mlx5_3");
}

// What Multus hands every plugin of the chain as deviceID is the ID kubelet allocated from the
// device plugin: "<rdma_dev>-<k>" for a shared pool.
TEST(RdmaSysfsTest, ResolvesASharedPoolsDeviceIdToItsRdmaDevice) {
  auto s = Fixture("mlx5_roce_sriov");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_0-0"), "mlx5_0");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_3-17"), "mlx5_3");
  EXPECT_EQ(*Fixture("rxe_veth").ResolveDeviceId("rxe0-3"), "rxe0");
  // Only a numeric suffix after an existing device counts.
  EXPECT_EQ(s.ResolveDeviceId("mlx5_9-0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ResolveDeviceId("mlx5_0-x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ResolveDeviceId("mlx5_0-").status().code(), StatusCode::kNotFound);
}

TEST(RdmaSysfsTest, UnknownOrMalformedDeviceIdIsAClearError) {
  auto s = Fixture("mlx5_roce_sriov");
  auto r = s.ResolveDeviceId("0000:99:00.0");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("0000:99:00.0"), std::string::npos);
  EXPECT_EQ(s.ResolveDeviceId("../x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Fixture("no_rdma").ResolveDeviceId("mlx5_0").status().code(), StatusCode::kNotFound);
}

TEST(RdmaSysfsTest, ResolvesNetdevsIncludingStackedAndSoftDevices) {
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

TEST(RdmaSysfsTest, FindsSoftRoceOverAVirtioNicByItsParentNetdev) {
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
  auto r = RdmaSysfs(tmp.path()).ResolveByNetdev("ens3", &p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "rxe0");
}

TEST(RdmaSysfsTest, SeveralRdmaDevicesOnOneBusDeviceIsAnErrorListingThem) {
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
  auto r = RdmaSysfs(tmp.path()).ResolveDeviceId("0000:3b:00.0");
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("mlx5_0, mlx5_7"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("deviceID"), std::string::npos) << r.status().message();
}

TEST(RdmaSysfsTest, PfNetdevOfVfSfAndPf) {
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

TEST(RdmaSysfsTest, ReadsTransportPortsGidsAndPkeys) {
  auto s = Fixture("mlx5_roce_sriov");
  auto d = s.ReadDevice("mlx5_1");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->transport, Transport::kRoce);
  EXPECT_EQ(d->bus_device_id(), "0000:5e:00.2");
  auto gids = s.ReadGids("mlx5_1", 1);
  ASSERT_TRUE(gids.ok());
  ASSERT_FALSE(gids->empty());
  EXPECT_TRUE(std::any_of(gids->begin(), gids->end(), [](auto& g) { return g.type == "RoCE v2"; }));
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
class RdmaSysfsWorldTest : public ::testing::Test {
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

TEST_F(RdmaSysfsWorldTest, ADeviceInAPodResolvesInThePodsViewAndIsHiddenFromTheNodes) {
  ASSERT_TRUE(world_->MoveRdmaDevice("mlx5_1", "pod").ok());
  auto pod_root = world_->RootOf("pod");
  ASSERT_TRUE(pod_root.ok());
  RdmaSysfs node(node_), pod(*pod_root);
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

TEST_F(RdmaSysfsWorldTest, LinksResolveInsideTheTreeUnderAProcFdRoot) {
  // The pod's view is reached through /proc/self/fd/<fd> (sysfs_view.h): realpath(3) would
  // leave the tree there.
  int fd = open(node_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  RdmaSysfs s("/proc/self/fd/" + std::to_string(fd));
  auto d = s.ReadDevice("mlx5_3");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bus_device_id(), "mlx5_core.sf.2");
  EXPECT_EQ(d->parent_rel, "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/mlx5_core.sf.2");
  EXPECT_EQ(*s.PfNetdev(*d), "ens1f0np0");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.3"), "mlx5_2");
  close(fd);
}

TEST_F(RdmaSysfsWorldTest, FindGidsReadsUpToTheLastWantedGidAcrossHoles) {
  // Index 2 a hole (a deleted address), the pod's IPv4 GID at 4 (RoCE v1) and 5 (RoCE v2).
  auto g = [&](int i, const std::string& text, const std::string& type) {
    ASSERT_TRUE(testing::WriteFile(gids("mlx5_1") + "gids/" + std::to_string(i), text + "\n"));
    if (!type.empty()) {
      ASSERT_TRUE(testing::WriteFile(gids("mlx5_1") + "gid_attrs/types/" + std::to_string(i), type + "\n"));
    }
  };
  const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
  g(2, zero, "");
  g(3, GidForIp("10.1.0.9"), "RoCE v2");
  g(4, GidForIp("10.1.0.7"), "IB/RoCE v1");
  g(5, GidForIp("10.1.0.7"), "RoCE v2");
  // Entries past the last wanted one cannot be read: FindGids must not need them.
  for (int i = 6; i < 16; ++i) {
    std::filesystem::remove(gids("mlx5_1") + "gids/" + std::to_string(i));
    std::filesystem::create_directories(gids("mlx5_1") + "gids/" + std::to_string(i));
  }
  RdmaSysfs s(node_);
  auto found = s.FindGids("mlx5_1", 1, {GidForIp("10.1.0.7")}, "RoCE v2");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (std::map<std::string, uint32_t>{{GidForIp("10.1.0.7"), 5}}));
  // A GID that is not there needs the whole table (holes), and says what it could not read.
  EXPECT_FALSE(s.FindGids("mlx5_1", 1, {GidForIp("10.1.0.8")}, "RoCE v2").ok());
  auto none = RdmaSysfs(node_).FindGids("mlx5_2", 1, {GidForIp("10.1.0.8")}, "RoCE v2");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(RdmaSysfsWorldTest, AFilledPrefixSearchStopsAtTheFirstFreeSlotAndReadsNothingPastIt) {
  // mlx5_0 port 1: defaults at 0 and 1, three IPv4 GIDs (v1 and v2) at 2..7, slot 8 free. Every
  // slot past it is a directory: a read there fails, so the search must not need them.
  for (int i = 9; i < 16; ++i) {
    std::filesystem::remove(gids("mlx5_0") + "gids/" + std::to_string(i));
    std::filesystem::create_directories(gids("mlx5_0") + "gids/" + std::to_string(i));
  }
  RdmaSysfs s(node_);
  auto present = s.SearchGids("mlx5_0", 1, {GidForIp("192.168.100.1")}, "RoCE v2", GidScope::kFilledPrefix);
  ASSERT_TRUE(present.ok()) << present.status().ToString();
  EXPECT_EQ(present->found, (std::map<std::string, uint32_t>{{GidForIp("192.168.100.1"), 5}}));
  EXPECT_EQ(present->slots_read, 6u) << "stops at the last wanted GID";

  auto missing = s.SearchGids("mlx5_0", 1, {GidForIp("10.9.9.9")}, "RoCE v2", GidScope::kFilledPrefix);
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_TRUE(missing->found.empty());
  EXPECT_EQ(missing->first_free, 8u);
  EXPECT_EQ(missing->slots_read, 9u) << "0..7 and the free slot 8, nothing past it";
  EXPECT_FALSE(s.SearchGids("mlx5_0", 1, {GidForIp("10.9.9.9")}, "RoCE v2", GidScope::kWholeTable).ok())
      << "the whole table does read past the free slot";
}

TEST_F(RdmaSysfsWorldTest, AFreeDefaultSlotDoesNotEndTheFilledPrefix) {
  // A port whose default GID slots are empty (its netdev had no MAC-based GID yet): the
  // kernel never puts another GID there, so the prefix goes on to the first free slot past them.
  const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
  ASSERT_TRUE(testing::WriteFile(gids("mlx5_0") + "gids/0", zero + "\n"));
  ASSERT_TRUE(testing::WriteFile(gids("mlx5_0") + "gids/1", zero + "\n"));
  auto r = RdmaSysfs(node_).SearchGids("mlx5_0", 1, {GidForIp("192.168.10.50")}, "RoCE v2",
                                       GidScope::kFilledPrefix);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->found, (std::map<std::string, uint32_t>{{GidForIp("192.168.10.50"), 7}}));
}

TEST_F(RdmaSysfsWorldTest, AFilledPrefixOfAFullTableEndsWhereTheSlotsEnd) {
  for (int i = 8; i < 16; ++i) {
    ASSERT_TRUE(testing::WriteFile(gids("mlx5_0") + "gids/" + std::to_string(i), GidForIp("10.0.1." + std::to_string(i)) + "\n"));
  }
  auto r = RdmaSysfs(node_).SearchGids("mlx5_0", 1, {GidForIp("10.9.9.9")}, "RoCE v2", GidScope::kFilledPrefix);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->first_free, 16u);
  EXPECT_EQ(r->slots_read, 16u);
}

}  // namespace
}  // namespace rdmak8s::cni
