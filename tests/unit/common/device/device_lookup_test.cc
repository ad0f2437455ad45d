#include "rdmak8s/device/device_lookup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "rdmak8s/device/device_id.h"
#include "rdmak8s/device/sysfs_attr.h"
#include "rdmak8s/discovery/discovery.h"
#include "support/sysfs_builder.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name;
}

// A node with two RDMA drivers on function 0000:3b:00.0 (mlx5_0, mlx5_7) and one on 0000:3c:00.0.
class TwoDriversOnOneFunctionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SysfsBuilder b(tmp_.path());
    for (auto addr : {"0000:3b:00.0", "0000:3c:00.0"}) {
      testing::PciFunctionSpec nic;
      nic.address = addr;
      ASSERT_TRUE(b.AddPciFunction(nic).ok());
    }
    for (auto [name, parent] : {std::pair{"mlx5_0", "0000:3b:00.0"}, std::pair{"mlx5_7", "0000:3b:00.0"},
                                std::pair{"mlx5_2", "0000:3c:00.0"}}) {
      testing::RdmaDeviceSpec d;
      d.name = name;
      d.parent_name = parent;
      d.ports = {testing::PortSpec{}};
      ASSERT_TRUE(b.AddRdmaDevice(d).ok());
    }
    ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  }
  testing::TempDir tmp_;
};

// The device plugin names a device by its bus device only when the CNI, resolving that ID, finds
// exactly that device there: both count the RDMA devices on the function, whatever the pool.
TEST_F(TwoDriversOnOneFunctionTest, DevicePluginAndCniAgreeOnWhatTheFunctionIdNames) {
  SysfsDiscovery discovery({tmp_.path(), nullptr});
  auto all = discovery.DiscoverAll();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_TRUE(all->failures.empty()) << all->failures.front().status.ToString();
  DeviceLookup lookup(tmp_.path());
  for (const RdmaDevice& d : all->devices) {
    SCOPED_TRACE(d.name);
    // DiscoverOne sees the same peers as DiscoverAll.
    auto one = discovery.DiscoverOne(d.name);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(one->bus_peers, d.bus_peers);
    const std::string id = ExclusiveDeviceId(d.name, d.bus_device_id(), !d.bus_peers.empty());
    auto back = lookup.ResolveDeviceId(id);
    ASSERT_TRUE(back.ok()) << id << ": " << back.status().ToString();
    EXPECT_EQ(*back, d.name) << "the ID the plugin publishes resolves to its device";
  }
  const RdmaDevice* mlx5_0 = FindByName(all->devices, "mlx5_0");
  ASSERT_NE(mlx5_0, nullptr);
  EXPECT_EQ(mlx5_0->bus_peers, std::vector<std::string>{"mlx5_7"});
  EXPECT_EQ(ExclusiveDeviceId("mlx5_0", "0000:3b:00.0", true), "mlx5_0");
  const RdmaDevice* mlx5_2 = FindByName(all->devices, "mlx5_2");
  ASSERT_NE(mlx5_2, nullptr);
  EXPECT_TRUE(mlx5_2->bus_peers.empty());
  EXPECT_EQ(ExclusiveDeviceId("mlx5_2", mlx5_2->bus_device_id(), false), "0000:3c:00.0");
  EXPECT_EQ(*lookup.ResolveDeviceId("0000:3c:00.0"), "mlx5_2");
  // The shared function's ID names no one device: an error listing both.
  auto r = lookup.ResolveDeviceId("0000:3b:00.0");
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("mlx5_0, mlx5_7"), std::string::npos) << r.status().message();
}

// Exclusive mode: mlx5_7 moved into a pod vanishes from the node's class/infiniband and from the
// function's infiniband/ directory, not from class/infiniband_verbs. mlx5_0's published ID must
// stay its name while its peer is away (kubelet holds the ID; it must not turn into the PCI
// address and back).
TEST_F(TwoDriversOnOneFunctionTest, APeerMovedIntoAPodStillCountsAndTheIdStays) {
  testing::NetnsSysfs views("node", tmp_.path(), tmp_.path() + "-views");
  ASSERT_TRUE(views.MoveRdmaDevice("mlx5_7", "pod").ok());
  ASSERT_FALSE(std::filesystem::exists(tmp_.path() + "/class/infiniband/mlx5_7")) << "the node view hides it";
  SysfsDiscovery discovery({tmp_.path(), nullptr});
  auto all = discovery.DiscoverAll();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  const RdmaDevice* mlx5_0 = FindByName(all->devices, "mlx5_0");
  ASSERT_NE(mlx5_0, nullptr);
  EXPECT_EQ(FindByName(all->devices, "mlx5_7"), nullptr);
  EXPECT_EQ(mlx5_0->bus_peers, std::vector<std::string>{"mlx5_7"});
  auto one = discovery.DiscoverOne("mlx5_0");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->bus_peers, std::vector<std::string>{"mlx5_7"});
  EXPECT_EQ(ExclusiveDeviceId(mlx5_0->name, mlx5_0->bus_device_id(), !mlx5_0->bus_peers.empty()), "mlx5_0");
  std::filesystem::remove_all(tmp_.path() + "-views");
}

// The CNI's view of a pod's sysfs is "/proc/self/fd/<fd>" (cni/sysfs_view.h): links resolve
// inside that tree, for the lookup and for discovery alike, never into the caller's namespace.
// A pod's view of sysfs in shared RDMA netns mode under containerd: its own eth0 in class/net,
// and every pod's rxe in class/infiniband, each naming "eth0" (its own pod's) as parent.
class SoftDevicesOverEveryPodsEth0Test : public ::testing::Test {
 protected:
  void Build(const std::string& pod_mac, const std::vector<std::pair<std::string, std::string>>& rxes) {
    testing::SysfsBuilder b(tmp_.path());
    testing::NetdevSpec eth0;
    eth0.name = "eth0";
    eth0.address = pod_mac;
    ASSERT_TRUE(b.AddNetdev(eth0).ok());
    for (const auto& [name, guid] : rxes) {
      testing::RdmaDeviceSpec rxe;
      rxe.name = name;
      rxe.parent = testing::RdmaParent::kVirtual;
      rxe.parent_attr = "eth0";
      rxe.node_guid = guid;
      testing::PortSpec port;
      port.link_layer = "Ethernet";
      rxe.ports = {port};
      ASSERT_TRUE(b.AddRdmaDevice(rxe).ok());
    }
    ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  }
  testing::TempDir tmp_;
};

TEST_F(SoftDevicesOverEveryPodsEth0Test, ThePodsOwnDeviceIsTheOneWithItsMacsGuid) {
  // rxe_slot1 sits on podA's eth0 (6e:a1:..), rxe_slot2 on this pod's (d2:55:..): listed first,
  // rxe_slot1 must not win by order.
  Build("d2:55:9c:0e:4f:21", {{"rxe_slot1", "6ca1:b2ff:fe03:0405"}, {"rxe_slot2", "d055:9cff:fe0e:4f21"}});
  uint32_t port = 0;
  auto r = DeviceLookup(tmp_.path()).ResolveByNetdev("eth0", &port);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "rxe_slot2");
}

TEST_F(SoftDevicesOverEveryPodsEth0Test, NoneWithItsMacsGuidIsAnErrorNamingThemNotAGuess) {
  Build("d2:55:9c:0e:4f:21", {{"rxe_slot1", "6ca1:b2ff:fe03:0405"}, {"rxe_slot2", "0000:0000:0000:0000"}});
  uint32_t port = 0;
  auto r = DeviceLookup(tmp_.path()).ResolveByNetdev("eth0", &port);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("rxe_slot1, rxe_slot2"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("d2:55:9c:0e:4f:21"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("deviceID"), std::string::npos) << r.status().message();
}

TEST(DeviceLookupTest, AProcSelfFdRootResolvesLinksInsideTheTree) {
  int fd = open(Fixture("mlx5_roce_sriov").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string root = "/proc/self/fd/" + std::to_string(fd);
  DeviceLookup lookup(root);
  auto d = lookup.ReadDevice("mlx5_3");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->bus_device_id(), "mlx5_core.sf.2");
  EXPECT_EQ(d->parent_rel, "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/mlx5_core.sf.2");
  EXPECT_EQ(ResolveInSysfsTree(root, "class/infiniband/mlx5_3/device"), d->parent_rel);
  EXPECT_EQ(*lookup.ResolveDeviceId("mlx5_core.sf.2"), "mlx5_3");
  EXPECT_EQ(*lookup.ResolveDeviceId("0000:5e:00.2"), "mlx5_1");
  auto one = SysfsDiscovery({root, nullptr}).DiscoverOne("mlx5_1");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->bus_device_id(), "0000:5e:00.2");
  EXPECT_EQ(one->transport, d->transport);
  close(fd);
}

// "mlx5_0\0alias" used to pass: the existence check's path stopped at the NUL.
TEST(DeviceLookupTest, ADeviceIdWithANulOrControlByteIsRefusedNotCutShort) {
  using namespace std::string_literals;
  DeviceLookup lookup(Fixture("mlx5_roce_sriov"));
  ASSERT_TRUE(lookup.ResolveDeviceId("mlx5_0").ok());
  for (const std::string& id : {"mlx5_0\0alias"s, "mlx5_0\0"s, "mlx5_0\n"s}) {
    auto r = lookup.ResolveDeviceId(id);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  }
}

TEST(DeviceLookupTest, ReadsTransportByTheOneRuleDiscoveryUses) {
  for (auto name : {"mlx5_roce_sriov", "mlx5_ib_2port", "irdma_iwarp", "siw_veth", "efa_unknown"}) {
    SCOPED_TRACE(name);
    auto all = SysfsDiscovery({Fixture(name), nullptr}).DiscoverAll();
    ASSERT_TRUE(all.ok());
    for (const RdmaDevice& dev : all->devices) {
      auto d = DeviceLookup(Fixture(name)).ReadDevice(dev.name);
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      EXPECT_EQ(d->transport, dev.transport) << dev.name;
    }
  }
  EXPECT_EQ(TransportOf(NodeType::kRnic, "Ethernet"), Transport::kIwarp);
  EXPECT_EQ(TransportOf(NodeType::kCa, "InfiniBand"), Transport::kIb);
  EXPECT_EQ(TransportOf(NodeType::kCa, "Ethernet"), Transport::kRoce);
  EXPECT_EQ(TransportOf(NodeType::kUsnic, "Ethernet"), Transport::kUnknown);
  EXPECT_EQ(TransportOf(NodeType::kCa, ""), Transport::kUnknown);
}

TEST(SysfsAttrTest, MissingIsNotFoundAndUnreadableIsNot) {
  testing::TempDir tmp;
  const std::string dir = tmp.path();
  { std::ofstream(dir + "/attr") << "4: ACTIVE\n"; }
  EXPECT_EQ(*ReadSysfsAttr(dir + "/attr"), "4: ACTIVE");
  auto missing = ReadSysfsAttr(dir + "/nosuch");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir + "/nosuch"), std::string::npos);
  std::filesystem::create_symlink("gone", dir + "/dangling");
  EXPECT_EQ(ReadSysfsAttr(dir + "/dangling").status().code(), StatusCode::kInternal)
      << "a dangling link is broken, not missing";
  std::filesystem::create_directory(dir + "/sub");
  auto unreadable = ReadSysfsAttr(dir + "/sub");
  EXPECT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ListSysfsDir(dir + "/nosuch").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*ListSysfsDir(dir), (std::vector<std::string>{"attr", "dangling", "sub"}));
  // A link that leaves the tree resolves to nothing.
  std::filesystem::create_symlink("/etc", dir + "/abs");
  std::filesystem::create_symlink("../..", dir + "/sub/up");
  EXPECT_EQ(ResolveInSysfsTree(dir, "abs"), "");
  EXPECT_EQ(ResolveInSysfsTree(dir, "sub/up"), "");
  EXPECT_EQ(ResolveInSysfsTree(dir, "sub"), "sub");
}

// ReadDevice is a subset of the model: every field it fills says what discovery says, but the
// parent kind of a soft device with a `device` link and siw's lower netdev (device_lookup.h).
TEST(DeviceLookupTest, ReadDeviceFillsItsSubsetOfTheModelAsDiscoveryDoes) {
  for (auto name : {"mlx5_roce_sriov", "mlx5_ib_2port", "irdma_iwarp", "irdma_roce", "bnxt_re_roce",
                    "cxgb4_iwarp", "rxe_veth", "siw_veth", "efa_unknown"}) {
    SCOPED_TRACE(name);
    auto all = SysfsDiscovery({Fixture(name), nullptr}).DiscoverAll();
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (const RdmaDevice& want : all->devices) {
      SCOPED_TRACE(want.name);
      auto got = DeviceLookup(Fixture(name)).ReadDevice(want.name);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->name, want.name);
      EXPECT_EQ(got->node_type, want.node_type);
      EXPECT_EQ(got->transport, want.transport);
      if (want.parent.kind != ParentKind::kVirtual) {
        EXPECT_EQ(got->parent.kind, want.parent.kind);
        EXPECT_EQ(got->bus_device_id(), want.bus_device_id());
      }
      // rxe's `parent` attribute only; discovery finds siw's netdev by other means.
      if (want.driver != "siw") {
        EXPECT_EQ(got->parent.lower_netdev, want.parent.lower_netdev);
      }
      ASSERT_EQ(got->ports.size(), want.ports.size());
      for (size_t i = 0; i < want.ports.size(); ++i) {
        EXPECT_EQ(got->ports[i].port_num, want.ports[i].port_num);
        EXPECT_EQ(got->ports[i].state, want.ports[i].state);
        EXPECT_EQ(got->ports[i].phys_state, want.ports[i].phys_state);
        EXPECT_EQ(got->ports[i].phys_state_name, want.ports[i].phys_state_name);
        EXPECT_EQ(got->ports[i].link_layer, want.ports[i].link_layer);
        EXPECT_TRUE(got->ports[i].gids.empty()) << "not in the subset";
      }
    }
  }
}

// Device IDs, netdevs and a device's facts as the CNI and the agents resolve them (these were
// tests/unit/cni/rdma_sysfs_test.cc, which tested this room from the CNI's folder).
bool CopyFixture(const std::string& name, const std::string& dst) {
  std::error_code ec;
  std::filesystem::copy(Fixture(name), dst,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks, ec);
  return !ec;
}

DeviceLookup Lookup(const std::string& name) {
  return DeviceLookup(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name);
}

TEST(DeviceLookupResolveTest, ResolvesDeviceIdByRdmaNamePciAddressAndAuxName) {
  auto s = Lookup("mlx5_roce_sriov");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_1"), "mlx5_1");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.2"), "mlx5_1");
  EXPECT_EQ(*s.ResolveDeviceId("0000:5e:00.0"), "mlx5_0");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_core.sf.2"), "mlx5_3");
}

// What Multus hands every plugin of the chain as deviceID is the ID kubelet allocated from the
// device plugin: "<rdma_dev>-<k>" for a shared pool.
TEST(DeviceLookupResolveTest, ResolvesASharedPoolsDeviceIdToItsRdmaDevice) {
  auto s = Lookup("mlx5_roce_sriov");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_0-0"), "mlx5_0");
  EXPECT_EQ(*s.ResolveDeviceId("mlx5_3-17"), "mlx5_3");
  EXPECT_EQ(*Lookup("rxe_veth").ResolveDeviceId("rxe0-3"), "rxe0");
  // Only a numeric suffix after an existing device counts.
  EXPECT_EQ(s.ResolveDeviceId("mlx5_9-0").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ResolveDeviceId("mlx5_0-x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ResolveDeviceId("mlx5_0-").status().code(), StatusCode::kNotFound);
}

TEST(DeviceLookupResolveTest, UnknownOrMalformedDeviceIdIsAClearError) {
  auto s = Lookup("mlx5_roce_sriov");
  auto r = s.ResolveDeviceId("0000:99:00.0");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("0000:99:00.0"), std::string::npos);
  EXPECT_EQ(s.ResolveDeviceId("../x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Lookup("no_rdma").ResolveDeviceId("mlx5_0").status().code(), StatusCode::kNotFound);
}

TEST(DeviceLookupResolveTest, ResolvesNetdevsIncludingStackedAndSoftDevices) {
  auto s = Lookup("mlx5_roce_sriov");
  uint32_t port = 0;
  EXPECT_EQ(*s.ResolveByNetdev("ens1f0v0", &port), "mlx5_1");
  EXPECT_EQ(*s.ResolveByNetdev("ens1f0np0", &port), "mlx5_0");
  EXPECT_EQ(port, 1u);
  EXPECT_EQ(*s.ResolveByNetdev("ens1f0np0.100", &port), "mlx5_0") << "VLAN follows lower_*";
  EXPECT_EQ(*s.ResolveByNetdev("enp94s0f0s2", &port), "mlx5_3");
  EXPECT_EQ(*Lookup("rxe_veth").ResolveByNetdev("veth0", &port), "rxe0");
  EXPECT_EQ(s.ResolveByNetdev("nosuch", &port).status().code(), StatusCode::kNotFound);
  uint32_t p2 = 0;
  EXPECT_EQ(*Lookup("mlx5_ib_2port").ResolveByNetdev("ib1", &p2), "mlx5_0");
  EXPECT_EQ(p2, 2u) << "dev_port 1 is port 2";
}

TEST(DeviceLookupResolveTest, FindsSoftRoceOverAVirtioNicByItsParentNetdev) {
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

TEST(DeviceLookupResolveTest, SeveralRdmaDevicesOnOneBusDeviceIsAnErrorListingThem) {
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

TEST(DeviceLookupResolveTest, PfNetdevOfVfSfAndPf) {
  auto s = Lookup("mlx5_roce_sriov");
  for (std::string dev : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) {
    auto d = s.ReadDevice(dev);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    auto pf = s.PfNetdev(*d);
    ASSERT_TRUE(pf.ok()) << dev << ": " << pf.status().ToString();
    EXPECT_EQ(*pf, "ens1f0np0") << dev;
  }
  auto rxe = Lookup("rxe_veth");
  EXPECT_EQ(*rxe.PfNetdev(*rxe.ReadDevice("rxe0")), "veth0");
}

TEST(DeviceLookupResolveTest, ReadsTransportPortsAndPkeys) {
  auto s = Lookup("mlx5_roce_sriov");
  auto d = s.ReadDevice("mlx5_1");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->transport, Transport::kRoce);
  EXPECT_EQ(d->bus_device_id(), "0000:5e:00.2");
  EXPECT_EQ(Lookup("irdma_iwarp").ReadDevice(*Lookup("irdma_iwarp").ListDevices()->begin())->transport,
            Transport::kIwarp);
  auto ib = Lookup("mlx5_ib_2port");
  EXPECT_EQ(ib.ReadDevice("mlx5_0")->transport, Transport::kIb);
  EXPECT_EQ(*ib.ReadPortState("mlx5_0", 1), PortState::kActive);
  EXPECT_EQ(*ib.ReadPortState("mlx5_0", 2), PortState::kDown);
  auto pkeys = ib.ReadPkeys("mlx5_0", 1);
  ASSERT_TRUE(pkeys.ok());
  EXPECT_FALSE(pkeys->empty());
}

// A copy of a fixture with the test world around it (netns-tagged views).
class DeviceLookupNetnsViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = tmp_.path() + "/node";
    ASSERT_TRUE(CopyFixture("mlx5_roce_sriov", node_));
    world_ = std::make_unique<rdmak8s::testing::NetnsSysfs>("node", node_, tmp_.path() + "/views");
  }
  std::string gids(const std::string& dev) { return node_ + "/class/infiniband/" + dev + "/ports/1/"; }
  testing::TempDir tmp_;
  std::string node_;
  std::unique_ptr<rdmak8s::testing::NetnsSysfs> world_;
};

TEST_F(DeviceLookupNetnsViewTest, ADeviceInAPodResolvesInThePodsViewAndIsHiddenFromTheNodes) {
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

TEST_F(DeviceLookupNetnsViewTest, LinksResolveInsideTheTreeUnderAProcFdRoot) {
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
}  // namespace rdmak8s
