// DeviceResolver on its own: which ports an attachment uses and whether an IB device can serve,
// over a copy of a kernel-shaped fixture tree (no netns needed: the pod view is the tree as is).
#include "cni/device_resolver.h"

#include <gtest/gtest.h>

#include "rdmak8s/device_lookup.h"
#include "cni_test_util.h"

namespace rdmak8s::cni {
namespace {

using testing::TempDir;
using testing::WriteFile;

SysfsDevice TwoPorts(PortState p1, PortState p2) {
  SysfsDevice d;
  d.name = "mlx5_0";
  d.transport = Transport::kIb;
  d.ports = {{1, p1, "InfiniBand"}, {2, p2, "InfiniBand"}};
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

}  // namespace
}  // namespace rdmak8s::cni
