// DeviceResolver on its own: which ports an attachment uses and whether an IB device can serve,
// over a copy of a kernel-shaped fixture tree (no netns needed: the pod view is the tree as is).
#include "cni/device_resolver.h"

#include <gtest/gtest.h>

#include "cni_test_util.h"
#include "rdmak8s/device/device_lookup.h"

namespace rdmak8s::cni {
namespace {

using testing::TempDir;
using testing::WriteFile;

// An IB port as the kernel shows it: ACTIVE ports are LinkUp, others Polling.
Port IbPort(uint32_t num, PortState state) {
  Port p;
  p.port_num = num;
  p.state = state;
  p.phys_state = state == PortState::kActive ? 5 : 2;
  p.phys_state_name = state == PortState::kActive ? "LinkUp" : "Polling";
  p.link_layer = "InfiniBand";
  return p;
}

LookedUpDevice TwoPorts(PortState p1, PortState p2) {
  LookedUpDevice d;
  d.name = "mlx5_0";
  d.transport = Transport::kIb;
  d.ports = {IbPort(1, p1), IbPort(2, p2)};
  return d;
}

struct World {
  TempDir tmp;
  PluginOptions options;
  Logger log;
  FailureCode failure;
  World() { log.Configure(LogLevel::kError, "", -1); }
  DeviceResolver Resolver(DeviceSelector sel) {
    return DeviceResolver(options, std::move(sel), tmp.path() + "/sys", nullptr, log, failure);
  }
};

TEST(DeviceResolverTest, PortsOfPrefersTheActivePortsWhenNoPortIsAskedFor) {
  World w;
  DeviceResolver any = w.Resolver({});
  EXPECT_EQ(any.PortsOf(TwoPorts(PortState::kActive, PortState::kDown), 0), std::vector<uint32_t>{1});
  // None ACTIVE: all of them, so CheckUsable says why each is not.
  EXPECT_EQ(any.PortsOf(TwoPorts(PortState::kDown, PortState::kDown), 0), (std::vector<uint32_t>{1, 2}));
  // The netdev's port, or the netconf's, wins even when it is DOWN.
  EXPECT_EQ(any.PortsOf(TwoPorts(PortState::kActive, PortState::kDown), 2), std::vector<uint32_t>{2});
  DeviceResolver port2 = w.Resolver({"", "net1", 2, std::nullopt});
  EXPECT_EQ(port2.PortsOf(TwoPorts(PortState::kActive, PortState::kDown), 1), std::vector<uint32_t>{2});
  // A port the device doesn't have: none.
  DeviceResolver port9 = w.Resolver({"", "net1", 9, std::nullopt});
  EXPECT_TRUE(port9.PortsOf(TwoPorts(PortState::kActive, PortState::kActive), 0).empty());
}

TEST(DeviceResolverTest, CheckUsableIsTryAgainWhileAnIbPortIsInitAndWiringWhenDown) {
  World w;
  const std::string sys = w.tmp.path() + "/sys";
  ASSERT_TRUE(testing::CopyFixture("mlx5_ib_2port", sys));
  DeviceResolver r = w.Resolver({});
  DeviceLookup sysfs(sys);
  auto dev = sysfs.ReadDevice("mlx5_0");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_TRUE(r.CheckUsable(sysfs, *dev, {1}).ok());
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/mlx5_0/ports/1/state", "2: INIT\n"));
  Status s = r.CheckUsable(sysfs, *dev, {1});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(w.failure.code(), kErrTryAgainLater) << s.ToString();
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n"));
  s = r.CheckUsable(sysfs, *dev, {1});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(w.failure.code(), kErrWiring) << s.ToString();
  EXPECT_NE(s.message().find("mlx5_0 port 1"), std::string::npos) << s.ToString();
}

TEST(DeviceResolverTest, ResolveDeviceFindsADeviceIdInTheNodesSysfs) {
  World w;
  ASSERT_TRUE(testing::CopyFixture("mlx5_roce_sriov", w.tmp.path() + "/sys"));
  DeviceResolver r = w.Resolver({"mlx5_1", "net1", 0, std::nullopt});
  auto here = CurrentNetns();
  ASSERT_TRUE(here.ok());
  std::string dev;
  uint32_t port = 0;
  bool in_pod = true;
  ASSERT_TRUE(r.ResolveDevice(*here, &dev, &port, &in_pod).ok());
  EXPECT_EQ(dev, "mlx5_1");
  EXPECT_FALSE(in_pod);
  DeviceResolver missing = w.Resolver({"mlx5_9", "net1", 0, std::nullopt});
  EXPECT_FALSE(missing.ResolveDevice(*here, &dev, &port, &in_pod).ok());
  EXPECT_EQ(w.failure.code(), kErrDeviceNotFound);
}

TEST(DeviceResolverTest, PortsOfPrefersPortsUsableByTheOneRuleNotJustActiveOnes) {
  World w;
  DeviceResolver any = w.Resolver({});
  LookedUpDevice d = TwoPorts(PortState::kActive, PortState::kActive);
  d.ports[0].phys_state = 6;
  d.ports[0].phys_state_name = "LinkErrorRecovery";
  EXPECT_EQ(any.PortsOf(d, 0), std::vector<uint32_t>{2});
}

// Before the one rule, the CNI judged only IB ports: a RoCE port the agents called Unhealthy
// (ACTIVE but phys_state Disabled, or DOWN) was attached.
TEST(DeviceResolverTest, CheckUsableIsTryAgainWhileARocePortIsNotUsableAndNamesWhy) {
  World w;
  const std::string sys = w.tmp.path() + "/sys";
  ASSERT_TRUE(testing::CopyFixture("mlx5_roce_sriov", sys));
  DeviceResolver r = w.Resolver({});
  DeviceLookup sysfs(sys);
  auto dev = sysfs.ReadDevice("mlx5_0");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_EQ(dev->transport, Transport::kRoce);
  EXPECT_TRUE(r.CheckUsable(sysfs, *dev, {1}).ok());
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/mlx5_0/ports/1/phys_state", "3: Disabled\n"));
  Status s = r.CheckUsable(sysfs, *dev, {1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(w.failure.code(), kErrTryAgainLater) << s.ToString();
  EXPECT_NE(s.message().find("roce port mlx5_0 port 1 is not usable yet: phys_state Disabled"),
            std::string::npos)
      << s.ToString();
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n"));
  s = r.CheckUsable(sysfs, *dev, {1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(w.failure.code(), kErrTryAgainLater) << s.ToString();
  EXPECT_NE(s.message().find("mlx5_0 port 1 is not usable yet: state DOWN"), std::string::npos)
      << s.ToString();
}

TEST(DeviceResolverTest, CheckUsableIsTryAgainWhileAnIwarpPortIsDown) {
  World w;
  const std::string sys = w.tmp.path() + "/sys";
  ASSERT_TRUE(testing::CopyFixture("siw_veth", sys));
  DeviceResolver r = w.Resolver({});
  DeviceLookup sysfs(sys);
  auto dev = sysfs.ReadDevice("siw0");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_EQ(dev->transport, Transport::kIwarp);
  EXPECT_TRUE(r.CheckUsable(sysfs, *dev, {1}).ok());
  // siw_query_port: a port that is not ACTIVE is phys_state Disabled.
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/siw0/ports/1/state", "1: DOWN\n"));
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/siw0/ports/1/phys_state", "3: Disabled\n"));
  Status s = r.CheckUsable(sysfs, *dev, {1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(w.failure.code(), kErrTryAgainLater) << s.ToString();
  EXPECT_NE(s.message().find("iwarp port siw0 port 1"), std::string::npos) << s.ToString();
}

TEST(DeviceResolverTest, CheckUsableFailsAnActiveIbPortThatIsNotLinkUpAsWiring) {
  World w;
  const std::string sys = w.tmp.path() + "/sys";
  ASSERT_TRUE(testing::CopyFixture("mlx5_ib_2port", sys));
  DeviceResolver r = w.Resolver({});
  DeviceLookup sysfs(sys);
  auto dev = sysfs.ReadDevice("mlx5_0");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/mlx5_0/ports/1/phys_state", "6: LinkErrorRecovery\n"));
  Status s = r.CheckUsable(sysfs, *dev, {1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(w.failure.code(), kErrWiring) << s.ToString();
  EXPECT_NE(s.message().find("phys_state LinkErrorRecovery"), std::string::npos) << s.ToString();
}

TEST(DeviceResolverTest, ResolveUsableRefusesARocePortTheAgentsCallUnhealthy) {
  World w;
  const std::string sys = w.tmp.path() + "/sys";
  ASSERT_TRUE(testing::CopyFixture("mlx5_roce_sriov", sys));
  ASSERT_TRUE(WriteFile(sys + "/class/infiniband/mlx5_1/ports/1/phys_state", "3: Disabled\n"));
  DeviceResolver r = w.Resolver({"mlx5_1", "net1", 0, std::nullopt});
  auto here = CurrentNetns();
  ASSERT_TRUE(here.ok());
  auto usable = r.ResolveUsable(*here);
  ASSERT_FALSE(usable.ok());
  EXPECT_EQ(w.failure.code(), kErrTryAgainLater) << usable.status().ToString();
  EXPECT_NE(usable.status().message().find("mlx5_1 port 1"), std::string::npos)
      << usable.status().ToString();
}

}  // namespace
}  // namespace rdmak8s::cni
