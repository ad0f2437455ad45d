// The real ethtool statistics reader (device-plugin/metrics/ethtool_stats.h) over SIOCETHTOOL, on a veth
// pair in a throwaway network namespace (veth has driver statistics: `ethtool -S` shows
// peer_ifindex), and its errors for a missing netdev and a driver without statistics.
#include "device-plugin/metrics/ethtool_stats.h"

#include <gtest/gtest.h>

#include "support/throwaway_netns.h"

namespace rdmak8s::dp {
namespace {

using rdmak8s::testing::NewThrowawayNetns;
using rdmak8s::testing::ShIn;

TEST(EthtoolStatsTest, ReadsTheNamedStatisticsOfAVeth) {
  auto ns = NewThrowawayNetns();
  ASSERT_TRUE(ns.ok()) << ns.status().message();
  ASSERT_TRUE(ShIn(*ns, "ip link add v0 type veth peer name v1").ok());
  IoctlEthtoolStats ethtool;
  StatusOr<NamedStats> stats = NotFoundError("not read");
  ASSERT_TRUE(RunInNetns(*ns, [&] {
                stats = ethtool.Read("v0");
                return Status::Ok();
              }).ok());
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  bool peer = false;
  for (const auto& [name, value] : *stats) peer |= name == "peer_ifindex" && value > 0;
  EXPECT_TRUE(peer) << "veth_get_ethtool_stats reports the peer's ifindex";
}

TEST(EthtoolStatsTest, AMissingNetdevIsNotFoundAndLoopbackHasNoStatistics) {
  auto ns = NewThrowawayNetns();
  ASSERT_TRUE(ns.ok()) << ns.status().message();
  IoctlEthtoolStats ethtool;
  Status missing, lo;
  ASSERT_TRUE(RunInNetns(*ns, [&] {
                missing = ethtool.Read("nosuch0").status();
                lo = ethtool.Read("lo").status();
                return Status::Ok();
              }).ok());
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.message();
  EXPECT_NE(missing.message().find("nosuch0"), std::string::npos) << missing.message();
  EXPECT_EQ(lo.code(), StatusCode::kUnimplemented) << lo.message();
}

TEST(EthtoolStatsTest, ANameTooLongForAnInterfaceIsRefused) {
  IoctlEthtoolStats ethtool;
  EXPECT_EQ(ethtool.Read("a-name-longer-than-ifnamsiz").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdmak8s::dp
