#include "rdmak8s/discovery/discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "rdmak8s/discovery/verbs.h"
#include "support/sysfs_builder.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::BuildScaleTree;
using testing::SysfsBuilder;
using testing::TempDir;

std::string Fixture(const std::string& name) {
  return std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name;
}

DiscoveryResult DiscoverFixture(const std::string& name, VerbsQuery* verbs = nullptr) {
  SysfsDiscovery discovery({Fixture(name), verbs});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : DiscoveryResult{};
}

std::vector<std::string> Names(const std::vector<RdmaDevice>& devs) {
  std::vector<std::string> out;
  for (const RdmaDevice& d : devs) out.push_back(d.name);
  return out;
}

std::vector<std::string> CharNames(const RdmaDevice& d) {
  std::vector<std::string> out;
  for (const CharDevice& c : d.char_devices) out.push_back(c.name);
  return out;
}

// --- mlx5 InfiniBand, every field ---

TEST(DiscoveryTest, Mlx5IbHcaReportsEveryDeviceAndPortField) {
  DiscoveryResult r = DiscoverFixture("mlx5_ib_2port");
  EXPECT_TRUE(r.rdma_present);
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("mlx5_0"));
  const RdmaDevice& d = r.devices[0];
  EXPECT_EQ(d.node_type, NodeType::kCa);
  EXPECT_EQ(d.transport, Transport::kIb);
  EXPECT_FALSE(d.roce_v1);
  EXPECT_FALSE(d.roce_v2);
  EXPECT_EQ(d.node_guid, "b859:9f03:00a1:2b3c");
  EXPECT_EQ(d.sys_image_guid, "b859:9f03:00a1:2b3c");
  EXPECT_EQ(d.fw_ver, "20.39.1002");
  EXPECT_EQ(d.hca_type, "MT4123");
  EXPECT_EQ(d.board_id, "MT_0000000222");
  EXPECT_EQ(d.driver, "mlx5_core");
  EXPECT_EQ(d.rdma_driver, "mlx5_ib");  // mlx5_core.rdma.0 -> bus/auxiliary/drivers/mlx5_ib.rdma
  EXPECT_FALSE(d.verbs.has_value());

  EXPECT_EQ(d.parent.kind, ParentKind::kPci);
  ASSERT_TRUE(d.parent.pci.has_value());
  const PciInfo& pci = *d.parent.pci;
  EXPECT_EQ(pci.address, "0000:3b:00.0");
  EXPECT_EQ(d.pci_address(), "0000:3b:00.0");
  EXPECT_EQ(pci.vendor_id, 0x15b3);
  EXPECT_EQ(pci.device_id, 0x101b);
  EXPECT_EQ(pci.subsystem_vendor_id, 0x15b3);
  EXPECT_EQ(pci.subsystem_device_id, 0x0006);
  EXPECT_EQ(pci.numa_node, 0);
  EXPECT_EQ(d.numa_node(), 0);
  EXPECT_THAT(pci.pcie_path, ElementsAre("0000:3a:00.0", "0000:3b:00.0"));
  EXPECT_FALSE(pci.is_vf);
  EXPECT_EQ(pci.pf_address, "");
  EXPECT_EQ(pci.vf_index, -1);
  EXPECT_EQ(pci.sriov_totalvfs, 0);
  EXPECT_EQ(pci.sriov_numvfs, 0);
  EXPECT_EQ(d.parent.aux_name, "");
  EXPECT_EQ(d.parent.lower_netdev, "");

  ASSERT_EQ(d.ports.size(), 2u);
  const Port& p1 = d.ports[0];
  EXPECT_EQ(p1.port_num, 1u);
  EXPECT_EQ(p1.state, PortState::kActive);
  EXPECT_EQ(p1.phys_state, 5u);
  EXPECT_EQ(p1.phys_state_name, "LinkUp");
  EXPECT_EQ(p1.link_layer, "InfiniBand");
  EXPECT_EQ(p1.rate, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(p1.lid, 0x1au);
  EXPECT_EQ(p1.sm_lid, 0x1u);
  EXPECT_EQ(p1.lmc, 0u);
  EXPECT_THAT(p1.pkeys, ElementsAre(0xffff, 0x8001));
  ASSERT_EQ(p1.gids.size(), 1u);
  EXPECT_EQ(p1.gids[0].index, 0u);
  EXPECT_EQ(p1.gids[0].gid, "fe80:0000:0000:0000:b859:9f03:00a1:2b3c");
  EXPECT_EQ(p1.gids[0].type, GidType::kIb);
  EXPECT_EQ(p1.gids[0].netdev, "");
  // dev_port 0 -> port 1, including the IPoIB child on the same function and port.
  EXPECT_THAT(p1.netdevs, ElementsAre("ib0", "ib0.8001"));

  const Port& p2 = d.ports[1];
  EXPECT_EQ(p2.port_num, 2u);
  EXPECT_EQ(p2.state, PortState::kDown);
  EXPECT_EQ(p2.phys_state, 2u);
  EXPECT_EQ(p2.phys_state_name, "Polling");
  EXPECT_EQ(p2.lid, 0u);
  EXPECT_THAT(p2.pkeys, ElementsAre(0xffff));
  EXPECT_THAT(p2.netdevs, ElementsAre("ib1"));
  EXPECT_EQ(d.FindPort(2), &d.ports[1]);
  EXPECT_EQ(d.FindPort(3), nullptr);

  EXPECT_THAT(d.netdevs, ElementsAre("ib0", "ib0.8001", "ib1"));
  EXPECT_THAT(CharNames(d), ElementsAre("uverbs0", "umad0", "issm0", "umad1", "issm1", "rdma_cm"));
  const CharDevice* uverbs = d.FindCharDevice(CharDeviceKind::kUverbs);
  ASSERT_NE(uverbs, nullptr);
  EXPECT_EQ(uverbs->major, 231u);
  EXPECT_EQ(uverbs->minor, 192u);
  EXPECT_EQ(uverbs->ContainerPath(), "/dev/infiniband/uverbs0");
  const CharDevice* umad2 = d.FindCharDevice(CharDeviceKind::kUmad, 2);
  ASSERT_NE(umad2, nullptr);
  EXPECT_EQ(umad2->name, "umad1");
  EXPECT_EQ(umad2->minor, 1u);
  const CharDevice* issm1 = d.FindCharDevice(CharDeviceKind::kIssm, 1);
  ASSERT_NE(issm1, nullptr);
  EXPECT_EQ(issm1->name, "issm0");
  EXPECT_EQ(issm1->minor, 64u);
  const CharDevice* cm = d.FindCharDevice(CharDeviceKind::kRdmaCm);
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ(cm->major, 10u);
  EXPECT_EQ(cm->minor, 58u);
  EXPECT_EQ(cm->ContainerPath(), "/dev/infiniband/rdma_cm");
}

// --- mlx5 RoCE with SR-IOV and an SF, every field ---

TEST(DiscoveryTest, Mlx5RocePfReportsSriovRoceVersionsAndUpperNetdevs) {
  DiscoveryResult r = DiscoverFixture("mlx5_roce_sriov");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"));
  const RdmaDevice& pf = r.devices[0];
  EXPECT_EQ(pf.node_type, NodeType::kCa);
  EXPECT_EQ(pf.transport, Transport::kRoce);
  EXPECT_TRUE(pf.roce_v1);
  EXPECT_TRUE(pf.roce_v2);
  EXPECT_EQ(pf.node_guid, "b859:9f03:0011:2230");
  EXPECT_EQ(pf.sys_image_guid, "b859:9f03:0011:2230");
  EXPECT_EQ(pf.fw_ver, "22.36.1010");
  EXPECT_EQ(pf.hca_type, "MT4125");
  EXPECT_EQ(pf.board_id, "MT_0000000359");
  EXPECT_EQ(pf.driver, "mlx5_core");
  EXPECT_EQ(pf.rdma_driver, "mlx5_ib");
  EXPECT_EQ(pf.parent.kind, ParentKind::kPci);
  ASSERT_TRUE(pf.parent.pci.has_value());
  EXPECT_EQ(pf.parent.pci->address, "0000:5e:00.0");
  EXPECT_EQ(pf.parent.pci->vendor_id, 0x15b3);
  EXPECT_EQ(pf.parent.pci->device_id, 0x101d);
  EXPECT_EQ(pf.parent.pci->subsystem_vendor_id, 0x15b3);
  EXPECT_EQ(pf.parent.pci->subsystem_device_id, 0x0016);
  EXPECT_EQ(pf.parent.pci->numa_node, 1);
  EXPECT_THAT(pf.parent.pci->pcie_path, ElementsAre("0000:5d:00.0", "0000:5e:00.0"));
  EXPECT_FALSE(pf.parent.pci->is_vf);
  EXPECT_EQ(pf.parent.pci->sriov_totalvfs, 8);
  EXPECT_EQ(pf.parent.pci->sriov_numvfs, 2);

  ASSERT_EQ(pf.ports.size(), 1u);
  const Port& p = pf.ports[0];
  EXPECT_EQ(p.state, PortState::kActive);
  EXPECT_EQ(p.link_layer, "Ethernet");
  EXPECT_EQ(p.rate, "100 Gb/sec (4X EDR)");
  // IB-only attributes are not reported on Ethernet ports.
  EXPECT_FALSE(p.lid.has_value());
  EXPECT_FALSE(p.sm_lid.has_value());
  EXPECT_FALSE(p.lmc.has_value());
  EXPECT_THAT(p.pkeys, IsEmpty());
  ASSERT_EQ(p.gids.size(), 8u);  // the 8 empty slots of the 16-entry table are skipped
  EXPECT_EQ(p.gids[0].index, 0u);
  EXPECT_EQ(p.gids[0].type, GidType::kRoceV1);
  EXPECT_EQ(p.gids[0].netdev, "ens1f0np0");
  EXPECT_EQ(p.gids[3].index, 3u);
  EXPECT_EQ(p.gids[3].gid, "0000:0000:0000:0000:0000:ffff:c0a8:0a01");
  EXPECT_EQ(p.gids[3].type, GidType::kRoceV2);
  EXPECT_EQ(p.gids[5].netdev, "ens1f0np0.100");
  EXPECT_EQ(p.gids[7].netdev, "mv0");
  EXPECT_THAT(p.netdevs, ElementsAre("ens1f0np0", "ens1f0np0.100", "mv0"));
  EXPECT_THAT(pf.netdevs, ElementsAre("ens1f0np0", "ens1f0np0.100", "mv0"));
  EXPECT_THAT(CharNames(pf), ElementsAre("uverbs0", "umad0", "issm0", "rdma_cm"));
}

TEST(DiscoveryTest, Mlx5VfsReportTheirPfAndVfIndex) {
  DiscoveryResult r = DiscoverFixture("mlx5_roce_sriov");
  ASSERT_EQ(r.devices.size(), 4u);
  for (int i : {0, 1}) {
    const RdmaDevice& vf = r.devices[1 + i];
    SCOPED_TRACE(vf.name);
    EXPECT_EQ(vf.transport, Transport::kRoce);
    EXPECT_EQ(vf.hca_type, "MT4126");
    EXPECT_EQ(vf.driver, "mlx5_core");
    EXPECT_EQ(vf.rdma_driver, "mlx5_ib");
    EXPECT_EQ(vf.parent.kind, ParentKind::kPci);
    ASSERT_TRUE(vf.parent.pci.has_value());
    EXPECT_TRUE(vf.parent.pci->is_vf);
    EXPECT_EQ(vf.parent.pci->pf_address, "0000:5e:00.0");
    EXPECT_EQ(vf.parent.pci->vf_index, i);
    EXPECT_EQ(vf.parent.pci->device_id, 0x101e);
    EXPECT_EQ(vf.parent.pci->sriov_totalvfs, 0);
    EXPECT_EQ(vf.numa_node(), 1);
    EXPECT_EQ(vf.parent.pci->pcie_path.back(), vf.pci_address());
  }
  EXPECT_EQ(r.devices[1].pci_address(), "0000:5e:00.2");
  EXPECT_THAT(r.devices[1].netdevs, ElementsAre("ens1f0v0"));
  EXPECT_EQ(r.devices[1].ports[0].gids.size(), 4u);
  EXPECT_EQ(r.devices[2].pci_address(), "0000:5e:00.3");
  EXPECT_THAT(r.devices[2].netdevs, ElementsAre("ens1f0v1"));
  EXPECT_THAT(CharNames(r.devices[2]), ElementsAre("uverbs2", "umad2", "issm2", "rdma_cm"));
}

TEST(DiscoveryTest, Mlx5ScalableFunctionIsAuxiliaryOnItsPf) {
  DiscoveryResult r = DiscoverFixture("mlx5_roce_sriov");
  ASSERT_EQ(r.devices.size(), 4u);
  const RdmaDevice& sf = r.devices[3];
  EXPECT_EQ(sf.name, "mlx5_3");
  EXPECT_EQ(sf.parent.kind, ParentKind::kAuxiliary);
  EXPECT_EQ(sf.parent.aux_name, "mlx5_core.sf.2");
  EXPECT_EQ(sf.driver, "mlx5_core.sf");
  EXPECT_EQ(sf.rdma_driver, "mlx5_ib");
  ASSERT_TRUE(sf.parent.pci.has_value());
  EXPECT_EQ(sf.parent.pci->address, "0000:5e:00.0");
  EXPECT_EQ(sf.numa_node(), 1);
  EXPECT_EQ(sf.transport, Transport::kRoce);
  EXPECT_THAT(sf.netdevs, ElementsAre("enp94s0f0s2"));
  EXPECT_THAT(CharNames(sf), ElementsAre("uverbs3", "umad3", "issm3", "rdma_cm"));
}

TEST(DiscoveryTest, LookupsFindDevicesByPciAuxNameAndNetdev) {
  DiscoveryResult r = DiscoverFixture("mlx5_roce_sriov");
  ASSERT_EQ(r.devices.size(), 4u);
  EXPECT_EQ(FindByName(r.devices, "mlx5_2"), &r.devices[2]);
  EXPECT_EQ(FindByName(r.devices, "mlx5_9"), nullptr);
  // The PF's own device, not the SF that also belongs to 0000:5e:00.0.
  EXPECT_EQ(FindByPciAddress(r.devices, "0000:5e:00.0"), &r.devices[0]);
  EXPECT_EQ(FindByPciAddress(r.devices, "0000:5e:00.3"), &r.devices[2]);
  EXPECT_EQ(FindByPciAddress(r.devices, "0000:99:00.0"), nullptr);
  EXPECT_EQ(FindByAuxName(r.devices, "mlx5_core.sf.2"), &r.devices[3]);
  EXPECT_EQ(FindByAuxName(r.devices, "mlx5_core.sf.3"), nullptr);
  EXPECT_THAT(FindByNetdev(r.devices, "mv0"), ElementsAre(&r.devices[0]));
  EXPECT_THAT(FindByNetdev(r.devices, "ens1f0v1"), ElementsAre(&r.devices[2]));
  EXPECT_THAT(FindByNetdev(r.devices, "eth9"), IsEmpty());
}

// --- classification of every fixture ---

// The one PF netdev rule (pf_netdev.h, the CNI's DeviceLookup::PfNetdev): the PF's netdev for the
// PF itself, its VFs and its SF; a soft device's lower netdev.
TEST(DiscoveryTest, EveryDeviceCarriesThePfNetdevWhereItsDcbLives) {
  DiscoveryResult r = DiscoverFixture("mlx5_roce_sriov");
  ASSERT_THAT(Names(r.devices), ElementsAre("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"));
  for (const RdmaDevice& d : r.devices) EXPECT_EQ(d.pf_netdev, "ens1f0np0") << d.name;
  EXPECT_EQ(DiscoverFixture("rxe_veth").devices.at(0).pf_netdev, "veth0");
  EXPECT_EQ(DiscoverFixture("siw_veth").devices.at(0).pf_netdev, "veth0");
  DiscoveryResult ib = DiscoverFixture("mlx5_ib_2port");
  ASSERT_FALSE(ib.devices.empty());
  EXPECT_FALSE(ib.devices[0].pf_netdev.empty()) << "an IPoIB netdev of the PF";
}

TEST(DiscoveryTest, IrdmaInIwarpModeIsIwarpWithPcieSwitchPath) {
  DiscoveryResult r = DiscoverFixture("irdma_iwarp");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("irdma0"));
  const RdmaDevice& d = r.devices[0];
  EXPECT_EQ(d.node_type, NodeType::kRnic);
  EXPECT_EQ(d.transport, Transport::kIwarp);
  EXPECT_FALSE(d.roce_v1 || d.roce_v2);
  EXPECT_EQ(d.driver, "ice");  // the PCI function's driver; irdma binds to its aux device
  EXPECT_EQ(d.rdma_driver, "irdma");  // ice.iwarp.0 -> bus/auxiliary/drivers/irdma
  EXPECT_EQ(d.numa_node(), 1);
  EXPECT_THAT(d.parent.pci->pcie_path,
              ElementsAre("0000:ae:02.0", "0000:af:00.0", "0000:b0:08.0", "0000:b1:00.0"));
  EXPECT_THAT(d.netdevs, ElementsAre("ens785f0"));
  ASSERT_EQ(d.ports[0].gids.size(), 1u);
  EXPECT_EQ(d.ports[0].gids[0].type, GidType::kUnknown);
  // iWARP has no MADs: no umad/issm.
  EXPECT_THAT(CharNames(d), ElementsAre("uverbs0", "rdma_cm"));
}

TEST(DiscoveryTest, IrdmaInRoceModeIsRoceV2OnlyWithUmad) {
  DiscoveryResult r = DiscoverFixture("irdma_roce");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("irdma1"));
  const RdmaDevice& d = r.devices[0];
  // Same hardware and driver as irdma_iwarp: only the node type tells the transports apart.
  EXPECT_EQ(d.node_type, NodeType::kCa);
  EXPECT_EQ(d.transport, Transport::kRoce);
  EXPECT_TRUE(d.roce_v2);
  EXPECT_FALSE(d.roce_v1);
  EXPECT_EQ(d.driver, "ice");
  EXPECT_EQ(d.rdma_driver, "irdma");
  EXPECT_THAT(d.netdevs, ElementsAre("ens785f1"));
  ASSERT_EQ(d.ports[0].gids.size(), 2u);
  EXPECT_EQ(d.ports[0].gids[1].gid, "0000:0000:0000:0000:0000:ffff:0a0a:0a05");
  EXPECT_EQ(d.ports[0].gids[1].type, GidType::kRoceV2);
  EXPECT_EQ(d.ports[0].gids[1].netdev, "ens785f1");
  // A RoCE CA has MADs (QP1): umad and issm exist, unlike in iWARP mode.
  EXPECT_THAT(CharNames(d), ElementsAre("uverbs0", "umad0", "issm0", "rdma_cm"));
}

TEST(DiscoveryTest, Cxgb4IsIwarpAndMapsNetdevsToPortsByDevPort) {
  DiscoveryResult r = DiscoverFixture("cxgb4_iwarp");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("iwp2s0f4"));
  const RdmaDevice& d = r.devices[0];
  EXPECT_EQ(d.transport, Transport::kIwarp);
  EXPECT_EQ(d.driver, "cxgb4");
  EXPECT_EQ(d.rdma_driver, "") << "iw_cxgb4 is not on the auxiliary bus: sysfs does not show it";
  EXPECT_EQ(d.pci_address(), "0000:02:00.4");
  ASSERT_EQ(d.ports.size(), 2u);
  EXPECT_THAT(d.ports[0].netdevs, ElementsAre("enp2s0f4"));
  EXPECT_THAT(d.ports[1].netdevs, ElementsAre("enp2s0f4d1"));
  EXPECT_EQ(d.ports[1].state, PortState::kDown);
  EXPECT_EQ(d.ports[1].phys_state_name, "Disabled");
  EXPECT_THAT(d.netdevs, ElementsAre("enp2s0f4", "enp2s0f4d1"));
}

TEST(DiscoveryTest, BnxtReIsRoceWithBothVersions) {
  DiscoveryResult r = DiscoverFixture("bnxt_re_roce");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("bnxt_re0"));
  const RdmaDevice& d = r.devices[0];
  EXPECT_EQ(d.transport, Transport::kRoce);
  EXPECT_TRUE(d.roce_v1);
  EXPECT_TRUE(d.roce_v2);
  EXPECT_EQ(d.driver, "bnxt_en");
  EXPECT_EQ(d.rdma_driver, "bnxt_re");  // bnxt_en.rdma.0 -> bnxt_re.rdma
  EXPECT_EQ(d.parent.pci->vendor_id, 0x14e4);
  EXPECT_THAT(d.netdevs, ElementsAre("ens2f0np0"));
  EXPECT_THAT(CharNames(d), ElementsAre("uverbs0", "umad0", "issm0", "rdma_cm"));
}

TEST(DiscoveryTest, RxeOnVethIsVirtualRoceV2OnItsNetdev) {
  DiscoveryResult r = DiscoverFixture("rxe_veth");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("rxe0"));
  const RdmaDevice& d = r.devices[0];
  EXPECT_EQ(d.node_type, NodeType::kCa);
  EXPECT_EQ(d.transport, Transport::kRoce);
  EXPECT_FALSE(d.roce_v1);
  EXPECT_TRUE(d.roce_v2);
  EXPECT_EQ(d.driver, "rxe");
  EXPECT_EQ(d.rdma_driver, "rxe");
  EXPECT_EQ(d.parent.kind, ParentKind::kVirtual);
  EXPECT_FALSE(d.parent.pci.has_value());
  EXPECT_EQ(d.parent.lower_netdev, "veth0");
  EXPECT_EQ(d.pci_address(), "");
  EXPECT_EQ(d.numa_node(), -1);
  EXPECT_THAT(d.netdevs, ElementsAre("veth0"));
  ASSERT_EQ(d.ports[0].gids.size(), 2u);
  EXPECT_EQ(d.ports[0].gids[1].index, 1u);
  EXPECT_EQ(d.ports[0].gids[1].gid, "0000:0000:0000:0000:0000:ffff:0a00:0001");
  EXPECT_THAT(CharNames(d), ElementsAre("uverbs0", "umad0", "issm0", "rdma_cm"));
}

TEST(DiscoveryTest, SiwIsIwarpByNodeTypeDespiteItsV1GidType) {
  DiscoveryResult r = DiscoverFixture("siw_veth");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("siw0"));
  const RdmaDevice& d = r.devices[0];
  EXPECT_EQ(d.node_type, NodeType::kRnic);
  EXPECT_EQ(d.transport, Transport::kIwarp);
  EXPECT_FALSE(d.roce_v1 || d.roce_v2);
  EXPECT_EQ(d.driver, "siw");
  EXPECT_EQ(d.rdma_driver, "siw");
  EXPECT_EQ(d.parent.kind, ParentKind::kVirtual);
  EXPECT_EQ(d.parent.lower_netdev, "veth0");
  EXPECT_THAT(d.netdevs, ElementsAre("veth0"));
  EXPECT_THAT(CharNames(d), ElementsAre("uverbs0", "rdma_cm"));
}

TEST(DiscoveryTest, EfaLikeUnspecifiedNodeIsReportedAsUnknownNotDropped) {
  DiscoveryResult r = DiscoverFixture("efa_unknown");
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("efa_0"));
  const RdmaDevice& d = r.devices[0];
  EXPECT_EQ(d.node_type, NodeType::kUnspecified);
  EXPECT_EQ(d.transport, Transport::kUnknown);
  EXPECT_EQ(d.driver, "efa");
  EXPECT_EQ(d.numa_node(), -1);
  EXPECT_THAT(d.parent.pci->pcie_path, ElementsAre("0000:00:06.0"));
  EXPECT_EQ(d.ports[0].link_layer, "Unknown");
  EXPECT_EQ(d.ports[0].gids[0].type, GidType::kUnknown);
  EXPECT_THAT(d.netdevs, IsEmpty());  // ens5 belongs to the ENA function next to it
}

TEST(DiscoveryTest, HostWithoutRdmaIsAnEmptyOkResult) {
  DiscoveryResult r = DiscoverFixture("no_rdma");
  EXPECT_FALSE(r.rdma_present);
  EXPECT_THAT(r.devices, IsEmpty());
  EXPECT_THAT(r.failures, IsEmpty());
}

TEST(DiscoveryTest, MissingSysfsRootIsNoRdmaNotAnError) {
  SysfsDiscovery discovery({"/nonexistent/rdmak8s/sys", nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->rdma_present);
}

TEST(DiscoveryTest, RootWithTrailingSlashFindsTheSameDevices) {
  SysfsDiscovery discovery({Fixture("mlx5_roce_sriov") + "/", nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->devices.size(), 4u);
  EXPECT_THAT(r->devices[0].netdevs, ElementsAre("ens1f0np0", "ens1f0np0.100", "mv0"));
  EXPECT_EQ(r->devices[1].parent.pci->vf_index, 0);
}

// The kernel writes `device` as "../../../0000:5e:00.0", but any link to the same directory
// must read the same: one ending in ".." once left a trailing '/', and the PF read as an
// auxiliary device of its own address (function=sf) and each VF lost its PF.
TEST(DiscoveryTest, DeviceLinksEndingInDotDotReadAsTheirTarget) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path root = fs::path(tmp.path()) / "sys";
  fs::copy(Fixture("mlx5_roce_sriov"), root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  int relinked = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!e.is_symlink() || (name != "device" && name != "physfn")) continue;
    if (e.path().parent_path().parent_path().filename() != "infiniband" && name != "physfn") continue;
    // "../../../0000:5e:00.0" -> "../../../0000:5e:00.0/infiniband/..": the same directory.
    const fs::path target = fs::read_symlink(e.path());
    fs::remove(e.path());
    fs::create_directory_symlink(target / "infiniband" / "..", e.path());
    ++relinked;
  }
  ASSERT_EQ(relinked, 6);  // four RDMA devices' `device`, two VFs' `physfn`
  SysfsDiscovery discovery({root.string(), nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->devices.size(), 4u);
  const RdmaDevice& pf = r->devices[0];
  EXPECT_EQ(pf.parent.kind, ParentKind::kPci);
  ASSERT_TRUE(pf.parent.pci.has_value());
  EXPECT_EQ(pf.parent.pci->address, "0000:5e:00.0");
  EXPECT_FALSE(pf.parent.pci->is_vf);
  EXPECT_EQ(pf.parent.pci->pf_address, "");
  for (int i : {0, 1}) {
    const RdmaDevice& vf = r->devices[1 + i];
    SCOPED_TRACE(vf.name);
    EXPECT_EQ(vf.parent.kind, ParentKind::kPci);
    ASSERT_TRUE(vf.parent.pci.has_value());
    EXPECT_TRUE(vf.parent.pci->is_vf);
    EXPECT_EQ(vf.parent.pci->pf_address, "0000:5e:00.0");
    EXPECT_EQ(vf.parent.pci->vf_index, i);
  }
  const RdmaDevice& sf = r->devices[3];
  EXPECT_EQ(sf.parent.kind, ParentKind::kAuxiliary);
  EXPECT_EQ(sf.parent.aux_name, "mlx5_core.sf.2");
  ASSERT_TRUE(sf.parent.pci.has_value());
  EXPECT_EQ(sf.parent.pci->address, "0000:5e:00.0");
  EXPECT_THAT(sf.netdevs, ElementsAre("enp94s0f0s2"));
}

// A copy of the mlx5_roce_sriov tree whose host bridge directory devices/pci0000:5d is a link
// to a directory elsewhere (named otherwise): read lexically, as every link of the tree is, the
// functions still sit under pci0000:5d; realpath(3) would place them outside the tree.
std::string TreeWithLinkedHostBridge(const TempDir& tmp) {
  const fs::path root = fs::path(tmp.path()) / "sys";
  fs::copy(Fixture("mlx5_roce_sriov"), root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const fs::path elsewhere = fs::path(tmp.path()) / "elsewhere";
  fs::create_directory(elsewhere);
  fs::rename(root / "devices/pci0000:5d", elsewhere / "bridge");
  fs::create_directory_symlink("../../elsewhere/bridge", root / "devices/pci0000:5d");
  return root.string();
}

TEST(DiscoveryTest, PcieRootIsTheHostBridgeOnTheLexicalPath) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  SysfsDiscovery discovery({TreeWithLinkedHostBridge(tmp), nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->devices.size(), 4u);
  for (const RdmaDevice& d : r->devices) {
    SCOPED_TRACE(d.name);
    ASSERT_TRUE(d.parent.pci.has_value());
    EXPECT_EQ(d.parent.pci->pcie_root, "pci0000:5d");
    ASSERT_FALSE(d.parent.pci->pcie_path.empty());
    EXPECT_EQ(d.parent.pci->pcie_path.front(), "0000:5d:00.0");
  }
}

TEST(DiscoveryTest, PcieRootOfEveryFixtureFunctionAndNoneForSoftDevices) {
  EXPECT_EQ(DiscoverFixture("mlx5_ib_2port").devices.at(0).parent.pci->pcie_root, "pci0000:3a");
  const RdmaDevice rxe = DiscoverFixture("rxe_veth").devices.at(0);
  EXPECT_FALSE(rxe.parent.pci.has_value());
}

// A sysfs root reached through a link (a bind mount seen as /proc/self/fd/N, a symlinked
// fixture) whose class/infiniband/<dev> is a directory, not a link: its `device` link is resolved
// from where it is named, in the tree's own spelling, so the netdev index (built the same way)
// still finds the function's netdevs (realpath(3) of the class directory left the tree's
// spelling, and no index entry matched).
TEST(DiscoveryTest, ClassDirectoryUnderALinkedRootKeepsItsNetdevs) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path real = fs::path(tmp.path()) / "real";
  fs::copy(Fixture("mlx5_roce_sriov"), real, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const fs::path cls = real / "class/infiniband/mlx5_0";
  const fs::path obj = real / "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_0";
  fs::remove(cls);
  fs::copy(obj, cls, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove(cls / "device");
  fs::create_directory_symlink("../../../devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0", cls / "device");
  // Only the netdev index may name the function's netdevs: no GID names one.
  fs::remove_all(cls / "ports/1/gid_attrs/ndevs");
  const fs::path linked = fs::path(tmp.path()) / "sys";
  fs::create_directory_symlink("real", linked);
  SysfsDiscovery discovery({linked.string(), nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->devices.size(), 4u);
  const RdmaDevice& pf = r->devices[0];
  ASSERT_EQ(pf.name, "mlx5_0");
  EXPECT_THAT(pf.netdevs, ElementsAre("ens1f0np0", "ens1f0np0.100", "mv0"));
  ASSERT_TRUE(pf.parent.pci.has_value());
  EXPECT_EQ(pf.parent.pci->pcie_root, "pci0000:5d");
}

// The rate's number, once, in discovery: the kernel's "2.5" of a 1X SDR port is 2.5, and text
// not in rate_show()'s form gives none (a leading number alone is not a rate).
TEST(DiscoveryTest, PortRateInGbpsFromTheKernelsText) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  SysfsBuilder b(tmp.path());
  const std::vector<std::pair<std::string, double>> cases = {
      {"200 Gb/sec (4X HDR)", 200}, {"2.5 Gb/sec (1X SDR)", 2.5}, {"100abc Gb/sec", 0},
      {"12.7 Gb/sec (1X SDR)", 0}, {"Unknown", 0}};
  for (size_t i = 0; i < cases.size(); ++i) {
    testing::PciFunctionSpec nic;
    nic.address = "0000:3" + std::to_string(i) + ":00.0";
    ASSERT_TRUE(b.AddPciFunction(nic).ok());
    testing::RdmaDeviceSpec d;
    d.name = "mlx5_" + std::to_string(i);
    d.parent_name = nic.address;
    testing::PortSpec port;
    port.rate = cases[i].first;
    d.ports = {port};
    ASSERT_TRUE(b.AddRdmaDevice(d).ok());
  }
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();
  SysfsDiscovery discovery({tmp.path(), nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->devices.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].first);
    ASSERT_EQ(r->devices[i].ports.size(), 1u);
    EXPECT_EQ(r->devices[i].ports[0].rate, cases[i].first);
    EXPECT_EQ(r->devices[i].ports[0].rate_gbps, cases[i].second);
  }
}

// --- DiscoverOne ---

TEST(DiscoveryTest, DiscoverOneReturnsTheNamedDevice) {
  SysfsDiscovery discovery({Fixture("mlx5_roce_sriov"), nullptr});
  StatusOr<RdmaDevice> d = discovery.DiscoverOne("mlx5_3");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->parent.aux_name, "mlx5_core.sf.2");
  EXPECT_THAT(CharNames(*d), ElementsAre("uverbs3", "umad3", "issm3", "rdma_cm"));
}

TEST(DiscoveryTest, DiscoverOneEqualsTheDeviceFromDiscoverAll) {
  for (const char* fixture : {"mlx5_ib_2port", "mlx5_roce_sriov", "rxe_veth", "siw_veth",
                              "cxgb4_iwarp"}) {
    SysfsDiscovery discovery({Fixture(fixture), nullptr});
    StatusOr<DiscoveryResult> all = discovery.DiscoverAll();
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    for (const RdmaDevice& want : all->devices) {
      SCOPED_TRACE(std::string(fixture) + " " + want.name);
      StatusOr<RdmaDevice> got = discovery.DiscoverOne(want.name);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_THAT(CharNames(*got), ::testing::ContainerEq(CharNames(want)));
      EXPECT_EQ(got->netdevs, want.netdevs);
      EXPECT_EQ(got->transport, want.transport);
      EXPECT_EQ(got->pci_address(), want.pci_address());
      EXPECT_EQ(got->parent.pci.has_value() ? got->parent.pci->vf_index : -2,
                want.parent.pci.has_value() ? want.parent.pci->vf_index : -2);
      ASSERT_EQ(got->ports.size(), want.ports.size());
      for (size_t i = 0; i < want.ports.size(); ++i) {
        EXPECT_EQ(got->ports[i].gids.size(), want.ports[i].gids.size());
        EXPECT_EQ(got->ports[i].netdevs, want.ports[i].netdevs);
      }
    }
  }
}

TEST(DiscoveryTest, DiscoverOneOfAMissingDeviceIsNotFound) {
  SysfsDiscovery discovery({Fixture("mlx5_roce_sriov"), nullptr});
  StatusOr<RdmaDevice> d = discovery.DiscoverOne("mlx5_7");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(), HasSubstr("class/infiniband/mlx5_7"));
}

TEST(DiscoveryTest, DiscoverOneRejectsPathLikeNames) {
  SysfsDiscovery discovery({Fixture("mlx5_roce_sriov"), nullptr});
  for (const char* bad : {"", "..", "../net", "a/b"}) {
    StatusOr<RdmaDevice> d = discovery.DiscoverOne(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

// --- failures: reported with the path, never dropped; missing vs unreadable ---

class BrokenTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    builder_ = std::make_unique<SysfsBuilder>(tmp_.path());
    ASSERT_TRUE(BuildScaleTree(*builder_, 3, 1, 8).ok()) << builder_->status().ToString();
  }
  std::string DevDir(const std::string& name) { return tmp_.path() + "/" + builder_->DevicePath(name); }
  DiscoveryResult Discover() {
    SysfsDiscovery discovery({tmp_.path(), nullptr});
    StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : DiscoveryResult{};
  }
  // Replaces attribute `rel` of device `name` with a directory (read(2) fails with EISDIR).
  void MakeDirectory(const std::string& name, const std::string& rel) {
    fs::remove(DevDir(name) + "/" + rel);
    fs::create_directories(DevDir(name) + "/" + rel);
  }
  void MakeDangling(const std::string& name, const std::string& rel) {
    fs::remove(DevDir(name) + "/" + rel);
    fs::create_symlink("../nowhere/at/all", DevDir(name) + "/" + rel);
  }

  TempDir tmp_;
  std::unique_ptr<SysfsBuilder> builder_;
};

TEST_F(BrokenTreeTest, GeneratedTreeDiscoversEveryDevice) {
  DiscoveryResult r = Discover();
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("mlx5_0", "mlx5_1", "mlx5_2"));
  EXPECT_FALSE(r.devices[0].parent.pci->is_vf);
  EXPECT_TRUE(r.devices[1].parent.pci->is_vf);
  EXPECT_EQ(r.devices[1].parent.pci->pf_address, "0000:10:00.0");
  EXPECT_EQ(r.devices[2].pci_address(), "0000:11:00.0");
  EXPECT_EQ(r.devices[2].numa_node(), 1);
}

TEST_F(BrokenTreeTest, AttributeThatIsADirectoryFailsTheDeviceWithItsPath) {
  MakeDirectory("mlx5_1", "node_guid");
  DiscoveryResult r = Discover();
  EXPECT_THAT(Names(r.devices), ElementsAre("mlx5_0", "mlx5_2"));
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].rdma_dev, "mlx5_1");
  EXPECT_NE(r.failures[0].status.code(), StatusCode::kNotFound);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("class/infiniband/mlx5_1/node_guid"));
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("Is a directory"));
}

TEST_F(BrokenTreeTest, DanglingSymlinkIsUnreadableNotMissing) {
  MakeDangling("mlx5_0", "ports/1/state");
  DiscoveryResult r = Discover();
  EXPECT_THAT(Names(r.devices), ElementsAre("mlx5_1", "mlx5_2"));
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].rdma_dev, "mlx5_0");
  EXPECT_EQ(r.failures[0].status.code(), StatusCode::kInternal);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("mlx5_0/ports/1/state: dangling symlink"));
}

TEST_F(BrokenTreeTest, MissingRequiredAttributeIsNotFoundWithItsPath) {
  fs::remove(DevDir("mlx5_2") + "/node_type");
  DiscoveryResult r = Discover();
  EXPECT_THAT(Names(r.devices), ElementsAre("mlx5_0", "mlx5_1"));
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].status.code(), StatusCode::kNotFound);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("mlx5_2/node_type"));
}

TEST_F(BrokenTreeTest, MissingOptionalAttributeIsJustAbsent) {
  fs::remove(DevDir("mlx5_0") + "/fw_ver");
  fs::remove(DevDir("mlx5_0") + "/board_id");
  DiscoveryResult r = Discover();
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_EQ(r.devices.size(), 3u);
  EXPECT_EQ(r.devices[0].fw_ver, "");
  EXPECT_EQ(r.devices[0].board_id, "");
}

TEST_F(BrokenTreeTest, UnreadableOptionalAttributeStillFails) {
  MakeDirectory("mlx5_0", "fw_ver");
  DiscoveryResult r = Discover();
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("mlx5_0/fw_ver"));
}

TEST_F(BrokenTreeTest, UnreadableGidAttributeFailsTheDevice) {
  MakeDirectory("mlx5_1", "ports/1/gid_attrs/types/1");
  DiscoveryResult r = Discover();
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("port 1"));
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("mlx5_1/ports/1/gid_attrs/types/1"));
}

TEST_F(BrokenTreeTest, UnreadablePciAttributeFailsTheDeviceWithThePciPath) {
  fs::remove(tmp_.path() + "/" + builder_->DevicePath("0000:10:00.0") + "/vendor");
  DiscoveryResult r = Discover();
  // The PF's device fails; its VF still reads (it only follows physfn to the PF directory).
  EXPECT_THAT(Names(r.devices), ElementsAre("mlx5_1", "mlx5_2"));
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].status.code(), StatusCode::kNotFound);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("0000:10:00.0/vendor"));
}

TEST_F(BrokenTreeTest, UnreadableCharDeviceFailsTheDeviceOnItsParent) {
  fs::remove(tmp_.path() + "/class/infiniband_verbs/uverbs1/ibdev");
  DiscoveryResult r = Discover();
  // uverbs1 hangs off mlx5_1's VF: that device can't be trusted to have its node.
  EXPECT_THAT(Names(r.devices), ElementsAre("mlx5_0", "mlx5_2"));
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].rdma_dev, "mlx5_1");
  EXPECT_EQ(r.failures[0].status.code(), StatusCode::kNotFound);
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("uverbs1/ibdev"));
  SysfsDiscovery discovery({tmp_.path(), nullptr});
  EXPECT_THAT(discovery.DiscoverOne("mlx5_1").status().message(), HasSubstr("uverbs1/ibdev"));
  EXPECT_TRUE(discovery.DiscoverOne("mlx5_0").ok());
}

TEST_F(BrokenTreeTest, UnreadableRdmaCmIsAFailureOfNoDevice) {
  fs::remove(tmp_.path() + "/devices/virtual/misc/rdma_cm/dev");
  fs::create_directory(tmp_.path() + "/devices/virtual/misc/rdma_cm/dev");
  DiscoveryResult r = Discover();
  EXPECT_EQ(r.devices.size(), 3u);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_EQ(r.failures[0].rdma_dev, "");
  EXPECT_THAT(r.failures[0].status.message(), HasSubstr("rdma_cm/dev"));
}

TEST_F(BrokenTreeTest, UnreadableClassInfinibandFailsTheWholeCall) {
  fs::remove_all(tmp_.path() + "/class/infiniband");
  std::ofstream(tmp_.path() + "/class/infiniband") << "not a directory\n";
  SysfsDiscovery discovery({tmp_.path(), nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("class/infiniband"));
}

TEST_F(BrokenTreeTest, EmptyClassInfinibandIsPresentWithNoDevices) {
  for (const char* d : {"mlx5_0", "mlx5_1", "mlx5_2"}) ASSERT_TRUE(builder_->RemoveDevice(d).ok());
  DiscoveryResult r = Discover();
  EXPECT_TRUE(r.rdma_present);
  EXPECT_THAT(r.devices, IsEmpty());
  EXPECT_THAT(r.failures, IsEmpty());
}

TEST_F(BrokenTreeTest, HotUnpluggedDeviceDisappearsWithItsCharDevices) {
  ASSERT_TRUE(builder_->RemoveDevice("mlx5_1").ok());
  DiscoveryResult r = Discover();
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_THAT(Names(r.devices), ElementsAre("mlx5_0", "mlx5_2"));
  EXPECT_THAT(CharNames(r.devices[1]), ElementsAre("uverbs2", "umad2", "issm2", "rdma_cm"));
  SysfsDiscovery discovery({tmp_.path(), nullptr});
  EXPECT_EQ(discovery.DiscoverOne("mlx5_1").status().code(), StatusCode::kNotFound);
}

TEST_F(BrokenTreeTest, PortStateChangeIsSeenOnTheNextDiscovery) {
  ASSERT_TRUE(builder_->SetPortState("mlx5_2", 1, "1: DOWN", "3: Disabled").ok());
  SysfsDiscovery discovery({tmp_.path(), nullptr});
  StatusOr<RdmaDevice> d = discovery.DiscoverOne("mlx5_2");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->ports[0].state, PortState::kDown);
  EXPECT_EQ(d->ports[0].phys_state, 3u);
  EXPECT_EQ(d->ports[0].phys_state_name, "Disabled");
}

TEST_F(BrokenTreeTest, GidAttrsOfValidGidMissingMeansNoTypeAndNoNetdev) {
  fs::remove(DevDir("mlx5_0") + "/ports/1/gid_attrs/types/2");
  fs::remove(DevDir("mlx5_0") + "/ports/1/gid_attrs/ndevs/2");
  DiscoveryResult r = Discover();
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_EQ(r.devices[0].ports[0].gids.size(), 4u);
  EXPECT_EQ(r.devices[0].ports[0].gids[2].type, GidType::kUnknown);
  EXPECT_EQ(r.devices[0].ports[0].gids[2].netdev, "");
}

// --- verbs enrichment ---

class FakeVerbsQuery : public VerbsQuery {
 public:
  std::map<std::string, StatusOr<VerbsAttrs>> answers;
  StatusOr<VerbsAttrs> QueryDevice(std::string_view rdma_dev) override {
    auto it = answers.find(std::string(rdma_dev));
    if (it == answers.end()) return NotFoundError("not listed: " + std::string(rdma_dev));
    return it->second;
  }
};

TEST(DiscoveryTest, VerbsEnrichDevicesLibibverbsSeesAndLeaveOthersAlone) {
  FakeVerbsQuery verbs;
  VerbsAttrs a;
  a.fw_ver = "22.36.1010";
  a.max_qp = 131072;
  a.max_cq = 16777216;
  a.max_mr = 16777216;
  a.max_pd = 8388608;
  a.phys_port_cnt = 1;
  verbs.answers.emplace("mlx5_0", a);
  verbs.answers.emplace("mlx5_1", StatusOr<VerbsAttrs>(InternalError("ibv_open_device: EIO")));
  DiscoveryResult r = DiscoverFixture("mlx5_roce_sriov", &verbs);
  EXPECT_THAT(r.failures, IsEmpty());
  ASSERT_EQ(r.devices.size(), 4u);
  ASSERT_TRUE(r.devices[0].verbs.has_value());
  EXPECT_EQ(r.devices[0].verbs->max_qp, 131072u);
  EXPECT_EQ(r.devices[0].verbs->phys_port_cnt, 1u);
  EXPECT_FALSE(r.devices[1].verbs.has_value());  // query failed: sysfs data still reported
  EXPECT_FALSE(r.devices[2].verbs.has_value());  // not listed by libibverbs
  EXPECT_EQ(r.devices[1].transport, Transport::kRoce);
}

TEST(DiscoveryTest, VerbsFirmwareFillsAnEmptySysfsFwVer) {
  FakeVerbsQuery verbs;
  VerbsAttrs a;
  a.fw_ver = "0.0.0";
  verbs.answers.emplace("rxe0", a);
  DiscoveryResult r = DiscoverFixture("rxe_veth", &verbs);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].fw_ver, "0.0.0");
}

// --- scale ---

TEST(DiscoveryScaleTest, GeneratedTreeOf64DevicesKeepsEveryVfOnItsPf) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  SysfsBuilder b(tmp.path());
  ASSERT_TRUE(BuildScaleTree(b, 64, 7, 16).ok()) << b.status().ToString();
  SysfsDiscovery discovery({tmp.path(), nullptr});
  StatusOr<DiscoveryResult> r = discovery.DiscoverAll();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->failures, IsEmpty());
  ASSERT_EQ(r->devices.size(), 64u);
  int vfs = 0;
  for (const RdmaDevice& d : r->devices) {
    SCOPED_TRACE(d.name);
    int n = std::stoi(d.name.substr(5));
    EXPECT_THAT(d.netdevs, ElementsAre("eth" + std::to_string(n)));
    EXPECT_EQ(d.transport, Transport::kRoce);
    EXPECT_EQ(d.ports[0].gids.size(), 4u);
    EXPECT_EQ(d.numa_node(), (n / 8) % 2);
    if (d.parent.pci->is_vf) {
      ++vfs;
      EXPECT_EQ(d.parent.pci->vf_index, n % 8 - 1);
      EXPECT_EQ(d.parent.pci->pf_address.substr(0, 8), d.pci_address().substr(0, 8));
    } else {
      EXPECT_EQ(d.parent.pci->sriov_numvfs, 7);
    }
    EXPECT_EQ(d.char_devices.size(), 4u);
  }
  EXPECT_EQ(vfs, 56);
}

}  // namespace
}  // namespace rdmak8s
