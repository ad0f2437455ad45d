// GidWaiter on its own: a real pod netns with an addressed interface, the GID table in a copy of
// a kernel-shaped fixture tree.
#include "cni/gid_waiter.h"

#include <gtest/gtest.h>

#include "cni/rdma_sysfs.h"
#include "cni_test_util.h"
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

}  // namespace
}  // namespace rdmak8s::cni
