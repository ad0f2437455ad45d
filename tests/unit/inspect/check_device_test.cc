// The checks every transport shares (check_device.h): the port check asks the one port-usable
// rule (rdmak8s/device/port_usable.h), so a port the agents call Unhealthy fails the node check
// too.
#include "check_device.h"

#include <gtest/gtest.h>

#include "check_fixture.h"

namespace rdmak8s::inspect {
namespace {

using testing::CheckNode;
using testing::Find;

constexpr const char* kPfPort = "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_0/ports/1";
constexpr const char* kPfNetdev = "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/net/ens1f0np0";

TEST(PortCheckTest, ActiveLinkUpRocePortWithItsNetdevUpPasses) {
  CheckNode node("mlx5_roce_sriov");
  CheckItem i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "port state");
  EXPECT_EQ(i.outcome, Outcome::kPass) << i.seen;
  EXPECT_EQ(i.seen, "ACTIVE / LinkUp, netdev ens1f0np0 up");
}

TEST(PortCheckTest, ActiveRocePortWhosePhysStateIsNotLinkUpFailsNamingIt) {
  CheckNode node("mlx5_roce_sriov");
  node.WriteFile(node.sys() + "/" + kPfPort + "/phys_state", "3: Disabled\n");
  CheckItem i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "port state");
  EXPECT_EQ(i.outcome, Outcome::kFail) << i.seen;
  EXPECT_EQ(i.fix.rfind("phys_state Disabled", 0), 0U) << i.fix;
  EXPECT_NE(i.fix.find("ethtool ens1f0np0"), std::string::npos) << i.fix;
}

TEST(PortCheckTest, ActiveRocePortWhoseNetdevIsDownFailsWithTheCommandThatBringsItUp) {
  CheckNode node("mlx5_roce_sriov");
  node.WriteFile(node.sys() + "/" + kPfNetdev + "/operstate", "down\n");
  CheckItem i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "port state");
  EXPECT_EQ(i.outcome, Outcome::kFail) << i.seen;
  EXPECT_EQ(i.seen, "ACTIVE / LinkUp, netdev ens1f0np0 down");
  EXPECT_EQ(i.fix, "netdev ens1f0np0 down: ip link set dev ens1f0np0 up");
}

TEST(PortCheckTest, UnreadableNetdevStateCountsAsUp) {
  CheckNode node("mlx5_roce_sriov");
  std::filesystem::remove(node.sys() + "/" + kPfNetdev + "/operstate");
  CheckItem i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "port state");
  EXPECT_EQ(i.outcome, Outcome::kPass) << i.seen;
  EXPECT_EQ(i.seen, "ACTIVE / LinkUp");
}

TEST(PortCheckTest, DownIbPortKeepsItsTransportsFix) {
  CheckNode node("mlx5_ib_2port");
  CheckItem i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 2", "port state");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "DOWN / Polling");
  EXPECT_NE(i.fix.find("ibstat mlx5_0 2"), std::string::npos) << i.fix;
}

}  // namespace
}  // namespace rdmak8s::inspect
