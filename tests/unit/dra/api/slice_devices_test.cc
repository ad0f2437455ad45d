#include "dra/api/slice_devices.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "rdmak8s/discovery/discovery.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::dra {
namespace {

std::string Fixture(const std::string& c) { return std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + c; }

std::vector<DeviceInput> Inputs(const std::string& fixture) {
  SysfsDiscovery discovery({Fixture(fixture), nullptr});
  auto result = discovery.DiscoverAll();
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return DeviceInputsOf(result->devices);
}

const SliceDevice* Find(const SliceDevicesResult& r, const std::string& name) {
  for (const auto& d : r.devices) if (d.name == name) return &d;
  return nullptr;
}

std::string Str(const SliceDevice& d, const std::string& attr) {
  auto it = d.attributes.find(attr);
  if (it == d.attributes.end()) return "<absent>";
  if (auto* s = std::get_if<std::string>(&it->second)) return *s;
  if (auto* i = std::get_if<int64_t>(&it->second)) return std::to_string(*i);
  return std::get<bool>(it->second) ? "true" : "false";
}

const SliceDeviceOptions kExclusive{"rdma.rdmak8s.io", 0};

TEST(SliceDevicesTest, OneDevicePerRdmaFunctionWithItsRelation) {
  auto r = BuildSliceDevices(Inputs("mlx5_roce_sriov"), kExclusive, {});
  ASSERT_EQ(r.devices.size(), 4u);
  const SliceDevice* pf = Find(r, "mlx5-0");
  const SliceDevice* vf = Find(r, "mlx5-1");
  const SliceDevice* sf = Find(r, "mlx5-3");
  ASSERT_TRUE(pf && vf && sf);
  EXPECT_EQ(Str(*pf, "function"), "pf");
  EXPECT_EQ(Str(*vf, "function"), "vf");
  EXPECT_EQ(Str(*sf, "function"), "sf");
  EXPECT_EQ(Str(*vf, "pfAddress"), "0000:5e:00.0");
  EXPECT_EQ(Str(*vf, "pfName"), "mlx5_0");
  EXPECT_EQ(Str(*vf, "vfIndex"), "0");
  EXPECT_EQ(Str(*sf, "pfName"), "mlx5_0");
  EXPECT_EQ(Str(*sf, "auxDevice"), "mlx5_core.sf.2");
  EXPECT_EQ(Str(*pf, "rdmaDevice"), "mlx5_0");
  EXPECT_EQ(Str(*pf, "transport"), "roce");
  EXPECT_EQ(Str(*pf, "linkLayer"), "Ethernet");
  EXPECT_EQ(Str(*pf, "vendorID"), "0x15b3");
  EXPECT_EQ(Str(*pf, "driver"), "mlx5_core");
  EXPECT_EQ(Str(*pf, "rdmaDriver"), "mlx5_ib");
  EXPECT_EQ(Str(*pf, "roceV2"), "true");
}

// Multus' DRA support hands the delegate CNI a claimed device's k8s.cni.cncf.io/deviceID, and
// takes only devices whose k8s.cni.cncf.io/resourceName a NAD's annotation names.
TEST(SliceDevicesTest, EveryDeviceCarriesTheDeviceIdAndResourceNameMultusReads) {
  auto r = BuildSliceDevices(Inputs("mlx5_roce_sriov"), kExclusive, {});
  const SliceDevice* pf = Find(r, "mlx5-0");
  const SliceDevice* vf = Find(r, "mlx5-1");
  const SliceDevice* sf = Find(r, "mlx5-3");
  ASSERT_TRUE(pf && vf && sf);
  EXPECT_EQ(Str(*pf, "k8s.cni.cncf.io/deviceID"), "0000:5e:00.0");
  EXPECT_EQ(Str(*vf, "k8s.cni.cncf.io/deviceID"), Str(*vf, "pciAddress"));
  EXPECT_EQ(Str(*sf, "k8s.cni.cncf.io/deviceID"), "mlx5_core.sf.2");
  for (const SliceDevice* d : {pf, vf, sf}) {
    EXPECT_EQ(Str(*d, "k8s.cni.cncf.io/resourceName"), "rdma.rdmak8s.io/roce") << d->name;
  }
  auto soft = BuildSliceDevices(Inputs("siw_veth"), kExclusive, {});
  ASSERT_EQ(soft.devices.size(), 1u);
  EXPECT_EQ(Str(soft.devices[0], "k8s.cni.cncf.io/deviceID"), Str(soft.devices[0], "rdmaDevice"));
  EXPECT_EQ(Str(soft.devices[0], "k8s.cni.cncf.io/resourceName"), "rdma.rdmak8s.io/iwarp");
}

TEST(SliceDevicesTest, StandardAttributesFromSysfs) {
  auto r = BuildSliceDevices(Inputs("mlx5_roce_sriov"), kExclusive, {});
  for (const auto& d : r.devices) {
    EXPECT_EQ(Str(d, "resource.kubernetes.io/pcieRoot"), "pci0000:5d") << d.name;
    EXPECT_EQ(Str(d, "resource.kubernetes.io/numaNode"), "1") << d.name;
  }
  EXPECT_EQ(Str(*Find(r, "mlx5-1"), "resource.kubernetes.io/pciBusID"), "0000:5e:00.2");
}

TEST(SliceDevicesTest, InfiniBandDevicesCarryLidSmLidAndPkeys) {
  auto r = BuildSliceDevices(Inputs("mlx5_ib_2port"), kExclusive, {});
  ASSERT_EQ(r.devices.size(), 1u);
  const SliceDevice& d = r.devices[0];
  EXPECT_EQ(Str(d, "transport"), "ib");
  EXPECT_EQ(Str(d, "lid"), "26");
  EXPECT_EQ(Str(d, "smLid"), "1");
  EXPECT_EQ(Str(d, "pkeys"), "0xffff,0x8001");
  EXPECT_EQ(Str(d, "firmware"), "20.39.1002");
  EXPECT_EQ(Str(d, "linkSpeedGbps"), "200");
  EXPECT_EQ(Str(d, "ports"), "2");
  EXPECT_EQ(Str(d, "activePorts"), "1");
  EXPECT_EQ(Str(d, "portState"), "ACTIVE");
  EXPECT_EQ(Str(d, "resource.kubernetes.io/pcieRoot"), "pci0000:3a");
}

// The host bridge directory is a link to a directory named otherwise: the root is still the
// pci<domain>:<bus> of the function's path in the tree (discovery's lexical rule), never where
// realpath(3) lands.
TEST(SliceDevicesTest, PcieRootFollowsTheTreesPathNotRealpath) {
  testing::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  namespace fs = std::filesystem;
  const fs::path root = fs::path(tmp.path()) / "sys";
  fs::copy(Fixture("mlx5_roce_sriov"), root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::create_directory(fs::path(tmp.path()) / "elsewhere");
  fs::rename(root / "devices/pci0000:5d", fs::path(tmp.path()) / "elsewhere/bridge");
  fs::create_directory_symlink("../../elsewhere/bridge", root / "devices/pci0000:5d");
  SysfsDiscovery discovery({root.string(), nullptr});
  auto found = discovery.DiscoverAll();
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  auto r = BuildSliceDevices(DeviceInputsOf(found->devices), kExclusive, {});
  ASSERT_EQ(r.devices.size(), 4u);
  EXPECT_TRUE(r.notes.empty());
  for (const auto& d : r.devices) {
    EXPECT_EQ(Str(d, "resource.kubernetes.io/pcieRoot"), "pci0000:5d") << d.name;
  }
}

// linkSpeedGbps is discovery's number (Port::rate_gbps), not a prefix of the text: "100abc" is
// no rate.
TEST(SliceDevicesTest, LinkSpeedGbpsIsTheModelsRateNotTheTextsLeadingDigits) {
  auto inputs = Inputs("mlx5_ib_2port");
  ASSERT_EQ(inputs.size(), 1u);
  Port& p = inputs[0].device.ports.at(0);
  p.rate = "100abc Gb/sec";
  p.rate_gbps = 0;
  EXPECT_EQ(Str(BuildSliceDevices(inputs, kExclusive, {}).devices.at(0), "linkSpeedGbps"), "<absent>");
  p.rate_gbps = 2.5;
  EXPECT_EQ(Str(BuildSliceDevices(inputs, kExclusive, {}).devices.at(0), "linkSpeedGbps"), "2");
}

TEST(SliceDevicesTest, SoftDevicesHaveNoPcieRoot) {
  auto r = BuildSliceDevices(Inputs("rxe_veth"), kExclusive, {});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(Str(r.devices[0], "function"), "soft");
  EXPECT_EQ(Str(r.devices[0], "lowerNetdev"), "veth0");
  EXPECT_EQ(Str(r.devices[0], "resource.kubernetes.io/pcieRoot"), "<absent>");
  EXPECT_EQ(Str(r.devices[0], "lid"), "<absent>");
}

TEST(SliceDevicesTest, EveryFixtureStaysWithinTheApiLimits) {
  for (const char* f : {"mlx5_ib_2port", "mlx5_roce_sriov", "irdma_iwarp", "irdma_roce", "cxgb4_iwarp",
                        "bnxt_re_roce", "rxe_veth", "siw_veth", "efa_unknown"}) {
    for (int shares : {0, 4}) {
      for (bool cc : {true, false}) {
        auto r = BuildSliceDevices(Inputs(f), {"rdma.rdmak8s.io", shares}, {true, cc});
        EXPECT_FALSE(r.devices.empty()) << f;
        for (const auto& d : r.devices) {
          EXPECT_TRUE(IsDnsLabel(d.name)) << d.name;
          EXPECT_LE(d.attributes.size() + d.capacity.size(), kMaxAttributesAndCapacities) << f << " " << d.name;
          for (const auto& [name, v] : d.attributes) {
            EXPECT_TRUE(IsValidQualifiedName(name)) << name;
            if (auto* s = std::get_if<std::string>(&v)) {
              EXPECT_LE(s->size(), kMaxAttributeValueLength) << name;
            }
          }
        }
      }
    }
  }
}

TEST(SliceDevicesTest, SharedModeIsConsumableCapacityWhereTheServerHasIt) {
  auto r = BuildSliceDevices(Inputs("rxe_veth"), {"rdma.rdmak8s.io", 8}, {true, true});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_TRUE(r.devices[0].allow_multiple_allocations);
  EXPECT_EQ(r.devices[0].capacity.at("shares").value, "8");
}

TEST(SliceDevicesTest, SharedModeIsNamedSharesWithoutConsumableCapacity) {
  auto r = BuildSliceDevices(Inputs("rxe_veth"), {"rdma.rdmak8s.io", 3}, {true, false});
  ASSERT_EQ(r.devices.size(), 3u);
  EXPECT_EQ(r.devices[0].name, "rxe0-0");
  EXPECT_EQ(r.devices[2].name, "rxe0-2");
  EXPECT_EQ(Str(r.devices[2], "share"), "2");
  EXPECT_FALSE(r.devices[0].allow_multiple_allocations);
  ASSERT_EQ(r.rdma_dev_of.size(), 3u);
  EXPECT_EQ(r.rdma_dev_of[1], (std::pair<std::string, std::string>("rxe0-1", "rxe0")));
}

TEST(SliceDevicesTest, UnhealthyDevicesAreTaintedOrWithdrawn) {
  auto inputs = Inputs("mlx5_roce_sriov");
  inputs[1].healthy = false;
  inputs[1].unhealthy_reason = "PortDown";
  auto tainted = BuildSliceDevices(inputs, kExclusive, {true, true});
  ASSERT_EQ(tainted.devices.size(), 4u);
  const SliceDevice* d = Find(tainted, DraDeviceName(inputs[1].device.name));
  ASSERT_TRUE(d);
  ASSERT_EQ(d->taints.size(), 1u);
  EXPECT_EQ(d->taints[0].key, "rdma.rdmak8s.io/unhealthy");
  EXPECT_EQ(d->taints[0].value, "portdown");
  EXPECT_EQ(d->taints[0].effect, "NoSchedule");

  auto withdrawn = BuildSliceDevices(inputs, kExclusive, {false, true});
  EXPECT_EQ(withdrawn.devices.size(), 3u);
  EXPECT_FALSE(Find(withdrawn, DraDeviceName(inputs[1].device.name)));
  ASSERT_EQ(withdrawn.notes.size(), 1u);
  EXPECT_NE(withdrawn.notes[0].find("withdrawn"), std::string::npos);
}

// Every port of `in` in `state`, and the device unhealthy as the health rule then says.
void SetPorts(DeviceInput& in, PortState state) {
  for (Port& p : in.device.ports) p.state = state;
  in.healthy = false;
  in.unhealthy_reason = "PortNotActive";
}

// KEP-5007: an IB port the subnet manager has not brought up yet (INIT, ARMED) is allocatable
// but holds the pod at binding until the driver says PortActive=True; a DOWN one is tainted.
TEST(SliceDevicesTest, AnInfiniBandPortWaitingForTheSubnetManagerCarriesBindingConditionsNotATaint) {
  for (PortState state : {PortState::kInit, PortState::kArmed}) {
    auto inputs = Inputs("mlx5_ib_2port");
    ASSERT_EQ(inputs.size(), 1u);
    SetPorts(inputs[0], state);
    auto r = BuildSliceDevices(inputs, kExclusive, {});
    ASSERT_EQ(r.devices.size(), 1u) << PortStateName(state);
    const SliceDevice& d = r.devices[0];
    EXPECT_TRUE(d.taints.empty()) << PortStateName(state);
    EXPECT_EQ(d.binding_conditions, std::vector<std::string>{"PortActive"});
    EXPECT_EQ(d.binding_failure_conditions, std::vector<std::string>{"PortActivationFailed"});
  }
}

TEST(SliceDevicesTest, AnInfiniBandPortDownIsTaintedWithoutBindingConditions) {
  auto inputs = Inputs("mlx5_ib_2port");
  SetPorts(inputs[0], PortState::kDown);
  auto r = BuildSliceDevices(inputs, kExclusive, {});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].taints.size(), 1u);
  EXPECT_TRUE(r.devices[0].binding_conditions.empty());
  EXPECT_TRUE(r.devices[0].binding_failure_conditions.empty());
}

// RoCE and iWARP have no subnet manager: a port that is not ACTIVE is tainted whatever its state.
TEST(SliceDevicesTest, ARocePortNotActiveIsTaintedEvenInInit) {
  auto inputs = Inputs("mlx5_roce_sriov");
  SetPorts(inputs[1], PortState::kInit);
  auto r = BuildSliceDevices(inputs, kExclusive, {});
  const SliceDevice* d = Find(r, DraDeviceName(inputs[1].device.name));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->taints.size(), 1u);
  EXPECT_TRUE(d->binding_conditions.empty());
}

// A server that dropped bindingConditions (gate off) would let the scheduler bind a pod to the
// port at once: the driver taints it instead.
TEST(SliceDevicesTest, AWaitingInfiniBandPortIsTaintedWhereTheServerDropsBindingConditions) {
  auto inputs = Inputs("mlx5_ib_2port");
  SetPorts(inputs[0], PortState::kInit);
  ServerFeatures features;
  features.binding_conditions = false;
  auto r = BuildSliceDevices(inputs, kExclusive, features);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].taints.size(), 1u);
  EXPECT_TRUE(r.devices[0].binding_conditions.empty());
}

TEST(SliceDevicesTest, TheUnhealthyTaintHasTheEffectTheNodeAdminChose) {
  auto inputs = Inputs("mlx5_roce_sriov");
  inputs[1].healthy = false;
  inputs[1].unhealthy_reason = "PortDown";
  for (const char* effect : kTaintEffects) {
    SliceDeviceOptions options{"rdma.rdmak8s.io", 0, effect};
    auto r = BuildSliceDevices(inputs, options, {true, true});
    const SliceDevice* d = Find(r, DraDeviceName(inputs[1].device.name));
    ASSERT_NE(d, nullptr);
    ASSERT_EQ(d->taints.size(), 1u);
    EXPECT_EQ(d->taints[0].effect, effect);
  }
}

TEST(SliceDevicesTest, AValueTooLongForTheApiIsLeftOutAndSaid) {
  auto inputs = Inputs("rxe_veth");
  inputs[0].device.netdevs = {std::string(40, 'a'), std::string(40, 'b')};
  auto r = BuildSliceDevices(inputs, kExclusive, {});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(Str(r.devices[0], "netdevs"), "<absent>");
  EXPECT_EQ(Str(r.devices[0], "netdev"), std::string(40, 'a'));
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("netdevs"), std::string::npos);
}

TEST(SliceDevicesTest, DeviceNamesAreDnsLabelsAndCollisionsAreSaid) {
  EXPECT_EQ(DraDeviceName("mlx5_0"), "mlx5-0");
  EXPECT_EQ(DraDeviceName("_Rxe0_"), "rxe0");
  EXPECT_EQ(DraDeviceName("__"), "");
  auto inputs = Inputs("rxe_veth");
  inputs.push_back(inputs[0]);
  inputs[1].device.name = "RXE0";
  auto r = BuildSliceDevices(inputs, kExclusive, {});
  EXPECT_EQ(r.devices.size(), 1u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("RXE0"), std::string::npos);
}

TEST(SliceDevicesTest, PciFunctionWithoutAHostBridgeIsPublishedWithoutPcieRootAndANote) {
  auto inputs = Inputs("mlx5_ib_2port");
  ASSERT_EQ(inputs.size(), 1u);
  inputs[0].device.parent.pci->pcie_root.clear();
  auto r = BuildSliceDevices(inputs, kExclusive, {});
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(Str(r.devices[0], "resource.kubernetes.io/pcieRoot"), "<absent>");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("no pcieRoot"), std::string::npos) << r.notes[0];
}

TEST(PcieRootTest, HostBridgeNames) {
  EXPECT_TRUE(IsPcieRootName("pci0000:5d"));
  EXPECT_TRUE(IsPcieRootName("pci10000:00"));
  EXPECT_FALSE(IsPcieRootName("pci0000:5d0"));
  EXPECT_FALSE(IsPcieRootName("0000:5d:00.0"));
}

}  // namespace
}  // namespace rdmak8s::dra
