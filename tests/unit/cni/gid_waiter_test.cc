// GidWaiter on its own: a real pod netns with an addressed interface, the GID table in a copy of
// a kernel-shaped fixture tree.
#include "cni/gid_waiter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "cni_test_util.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/roce_gid.h"
#include "support/throwaway_netns.h"

namespace rdmak8s::cni {
namespace {

using rdmak8s::testing::NewThrowawayNetns;
using rdmak8s::testing::ShIn;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

TEST(GidWaiterTest, AMissingGidIs102NamingItAndAPresentOneIsReportedWithItsIndex) {
  TempDir tmp;
  const std::string sys = tmp.path() + "/sys";
  ASSERT_TRUE(testing::CopyFixture("mlx5_roce_sriov", sys));
  auto pod = NewThrowawayNetns();
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  // IPv6 off: only the IPv4 address's GID is wanted, not a link-local one too.
  ASSERT_TRUE(ShIn(*pod, "ip link add net1 type veth peer name p1 && "
                         "sysctl -q -w net.ipv6.conf.net1.disable_ipv6=1 && "
                         "ip addr add 10.77.0.5/24 dev net1 && ip link set net1 up && ip link set p1 up")
                  .ok());
  PluginOptions options;
  options.new_route_netlink = [] { return NewRouteNetlink(); };
  options.gid_poll_interval_ms = 1;
  Logger log;
  log.Configure(LogLevel::kInfo, tmp.path() + "/log", -1);
  FailureCode failure;
  DeviceResolver resolver(options, {}, sys, nullptr, log, failure);
  GidWaiter gids(options, "net1", resolver, log, failure);
  AttachmentRecord rec;
  rec.rdma_dev = "mlx5_0";
  rec.netns_mode = "shared";

  Status s = gids.CheckGids(rec, *pod, {1}, 0, true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(failure.code(), kErrGidMissing);
  EXPECT_NE(s.message().find(GidForIp("10.77.0.5") + " (10.77.0.5)"), std::string::npos) << s.ToString();

  const std::string port = sys + "/class/infiniband/mlx5_0/ports/1";
  ASSERT_TRUE(WriteFile(port + "/gid_attrs/types/7", "RoCE v2\n"));
  ASSERT_TRUE(WriteFile(port + "/gids/7", GidForIp("10.77.0.5") + "\n"));
  s = gids.CheckGids(rec, *pod, {1}, 0, true);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(ReadFile(tmp.path() + "/log").find("RoCE v2 GID index 7 for 10.77.0.5 on mlx5_0 port 1"),
            std::string::npos)
      << ReadFile(tmp.path() + "/log");
}

// A pod netns with net1 (IPv6 off) and a copy of mlx5_roce_sriov; GIDs waited for on mlx5_0.
class GidWaiterFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    sys_ = tmp_.path() + "/sys";
    ASSERT_TRUE(testing::CopyFixture("mlx5_roce_sriov", sys_));
    auto pod = NewThrowawayNetns();
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    pod_.emplace(std::move(*pod));
    ASSERT_TRUE(ShIn(*pod_, "ip link add net1 type veth peer name p1 && "
                            "sysctl -q -w net.ipv6.conf.net1.disable_ipv6=1 && "
                            "ip link set net1 up && ip link set p1 up")
                    .ok());
    options_.new_route_netlink = [] { return NewRouteNetlink(); };
    options_.gid_poll_interval_ms = 1;
    log_.Configure(LogLevel::kInfo, tmp_.path() + "/log", -1);
    rec_.rdma_dev = "mlx5_0";
    rec_.netns_mode = "shared";
  }
  std::string port() const { return sys_ + "/class/infiniband/mlx5_0/ports/1"; }
  Status Check(int timeout_ms) {
    DeviceResolver resolver(options_, {}, sys_, nullptr, log_, failure_);
    GidWaiter gids(options_, "net1", resolver, log_, failure_);
    return gids.CheckGids(rec_, *pod_, {1}, timeout_ms, true);
  }

  TempDir tmp_;
  std::string sys_;
  std::optional<Netns> pod_;
  PluginOptions options_;
  Logger log_;
  FailureCode failure_;
  AttachmentRecord rec_;
};

TEST_F(GidWaiterFixture, NoIpReadsNothingFromTheGidTable) {
  // The table cannot be read at all: a wait that touched it would fail with 5.
  ASSERT_EQ(std::system(("rm -rf '" + port() + "/gids'").c_str()), 0);
  Status s = Check(1000);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(ReadFile(tmp_.path() + "/log").find("has no IP: no GID to wait for"), std::string::npos);
}

TEST_F(GidWaiterFixture, AWaitReadsOnlyTheFilledPrefixWhenItsGidIsThere) {
  ASSERT_TRUE(ShIn(*pod_, "ip addr add 192.168.100.1/24 dev net1").ok());
  // Slot 8 is free; every slot past it is a directory, which a read would fail on (code 5).
  for (int i = 9; i < 16; ++i) {
    const std::string g = port() + "/gids/" + std::to_string(i);
    ASSERT_EQ(std::system(("rm -f '" + g + "' && mkdir '" + g + "'").c_str()), 0);
  }
  Status s = Check(1000);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(ReadFile(tmp_.path() + "/log").find("RoCE v2 GID index 5 for 192.168.100.1 on mlx5_0 port 1"),
            std::string::npos)
      << ReadFile(tmp_.path() + "/log");
}

TEST_F(GidWaiterFixture, AGidPastAHoleIsStillFound) {
  // Slot 3 freed (a deleted address), the pod's GID at 12, past the free slot 8: not in the
  // prefix, found by the whole read made once the prefix stays the same.
  ASSERT_TRUE(ShIn(*pod_, "ip addr add 10.77.0.5/24 dev net1").ok());
  ASSERT_TRUE(WriteFile(port() + "/gids/3", "0000:0000:0000:0000:0000:0000:0000:0000\n"));
  ASSERT_TRUE(WriteFile(port() + "/gids/12", GidForIp("10.77.0.5") + "\n"));
  ASSERT_TRUE(WriteFile(port() + "/gid_attrs/types/12", "RoCE v2\n"));
  Status s = Check(60000);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(ReadFile(tmp_.path() + "/log").find("RoCE v2 GID index 12 for 10.77.0.5"), std::string::npos)
      << ReadFile(tmp_.path() + "/log");
}

}  // namespace
}  // namespace rdmak8s::cni
