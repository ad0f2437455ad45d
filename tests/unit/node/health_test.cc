#include "node/health.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::node {
namespace {

using namespace dp::testdev;

NetdevUpFn AllUp() {
  return [](std::string_view) { return std::optional<bool>(true); };
}

TEST(HealthTest, ActiveLinkUpPortIsHealthy) {
  EXPECT_EQ(EvaluateHealth(Ib("mlx5_0", 0), AllUp()), (DeviceHealth{true, ""}));
}

TEST(HealthTest, PortNotActiveIsUnhealthy) {
  RdmaDevice d = Ib("mlx5_0", 0);
  d.ports[0].state = PortState::kInit;
  EXPECT_EQ(EvaluateHealth(d, AllUp()), (DeviceHealth{false, "port 1 state INIT"}));
}

TEST(HealthTest, PhysStateNotLinkUpIsUnhealthy) {
  RdmaDevice d = Ib("mlx5_0", 0);
  d.ports[0].phys_state = 3;
  d.ports[0].phys_state_name = "Disabled";
  EXPECT_EQ(EvaluateHealth(d, AllUp()), (DeviceHealth{false, "port 1 phys_state Disabled"}));
}

TEST(HealthTest, RoceNetdevDownIsUnhealthy) {
  RdmaDevice d = Roce("mlx5_0", 0, "ens1f0");
  auto down = [](std::string_view n) { return std::optional<bool>(n != "ens1f0"); };
  EXPECT_EQ(EvaluateHealth(d, down), (DeviceHealth{false, "port 1 netdev ens1f0 down"}));
}

TEST(HealthTest, IwarpNetdevDownIsUnhealthy) {
  RdmaDevice d = Iwarp("irdma0", 0, "ens785f0");
  auto down = [](std::string_view) { return std::optional<bool>(false); };
  EXPECT_FALSE(EvaluateHealth(d, down).healthy);
}

TEST(HealthTest, UnknownNetdevStateDoesNotFlap) {
  RdmaDevice d = Roce("mlx5_0", 0, "ens1f0");
  auto unknown = [](std::string_view) { return std::optional<bool>(); };
  EXPECT_TRUE(EvaluateHealth(d, unknown).healthy);
}

TEST(HealthTest, IbIgnoresNetdevState) {
  RdmaDevice d = Ib("mlx5_0", 0);
  d.netdevs = {"ib0"};
  d.ports[0].netdevs = {"ib0"};
  auto down = [](std::string_view) { return std::optional<bool>(false); };
  EXPECT_TRUE(EvaluateHealth(d, down).healthy);
}

TEST(HealthTest, OneUsablePortKeepsDualPortDeviceHealthy) {
  RdmaDevice d = Ib("mlx5_0", 0);
  Port p2 = d.ports[0];
  p2.port_num = 2;
  p2.state = PortState::kDown;
  d.ports.push_back(p2);
  EXPECT_TRUE(EvaluateHealth(d, AllUp()).healthy);
  d.ports[0].state = PortState::kDown;
  EXPECT_EQ(EvaluateHealth(d, AllUp()),
            (DeviceHealth{false, "port 1 state DOWN; port 2 state DOWN"}));
}

TEST(HealthTest, ReadNetdevUpReadsOperstate) {
  const rdmak8s::testing::TempDir tmp;  // removed with what the test wrote, even on a failure
  const std::string& dir = tmp.path();
  ASSERT_FALSE(dir.empty());
  std::filesystem::create_directories(dir + "/class/net/a");
  std::filesystem::create_directories(dir + "/class/net/b");
  std::filesystem::create_directories(dir + "/class/net/c");
  std::ofstream(dir + "/class/net/a/operstate") << "up\n";
  std::ofstream(dir + "/class/net/b/operstate") << "down\n";
  std::ofstream(dir + "/class/net/c/operstate") << "unknown\n";
  EXPECT_EQ(ReadNetdevUp(dir, "a"), true);
  EXPECT_EQ(ReadNetdevUp(dir, "b"), false);
  EXPECT_EQ(ReadNetdevUp(dir, "c"), true);
  EXPECT_EQ(ReadNetdevUp(dir, "missing"), std::nullopt);
}

}  // namespace
}  // namespace rdmak8s::node
