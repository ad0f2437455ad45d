#include "dra/device_catalog.h"

#include <gtest/gtest.h>

#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra {
namespace {

node::TrackedDevice Tracked(RdmaDevice dev, bool healthy = true,
                          node::Presence presence = node::Presence::kPresent) {
  return {std::move(dev), {healthy, healthy ? "" : "port 1 state DOWN"}, presence};
}

TEST(DeviceCatalog, DraNamesAreDnsLabels) {
  EXPECT_EQ(DraDeviceName("mlx5_0"), "mlx5-0");
  EXPECT_EQ(DraDeviceName("RXE0"), "rxe0");
  EXPECT_EQ(DraDeviceName(std::string(70, 'a')).size(), 63u);
}

TEST(DeviceCatalog, FindsByPoolAndDraNameAndLeavesGoneDevicesOut) {
  int64_t now = 100;
  DeviceCatalog catalog("node-a", [&] { return now; });
  catalog.Update({{"mlx5_0", Tracked(dp::testdev::Ib("mlx5_0", 0))},
                  {"mlx5_1", Tracked(dp::testdev::Ib("mlx5_1", 1), false, node::Presence::kGone)}});
  auto found = catalog.Find("node-a", "mlx5-0");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->dev.name, "mlx5_0");
  EXPECT_EQ(found->last_updated, 100);
  EXPECT_FALSE(catalog.Find("node-b", "mlx5-0").has_value());
  EXPECT_FALSE(catalog.Find("node-a", "mlx5-1").has_value());
  EXPECT_EQ(catalog.All().size(), 1u);
}

TEST(DeviceCatalog, GenerationMovesOnlyOnAVisibleChangeAndStampsHealthChanges) {
  int64_t now = 100;
  DeviceCatalog catalog("node-a", [&] { return now; });
  catalog.Update({{"mlx5_0", Tracked(dp::testdev::Ib("mlx5_0", 0))}});
  uint64_t g = catalog.generation();
  now = 200;
  catalog.Update({{"mlx5_0", Tracked(dp::testdev::Ib("mlx5_0", 0))}});
  EXPECT_EQ(catalog.generation(), g);
  EXPECT_EQ(catalog.Find("node-a", "mlx5-0")->last_updated, 100);
  catalog.Update({{"mlx5_0", Tracked(dp::testdev::Ib("mlx5_0", 0), false)}});
  EXPECT_NE(catalog.generation(), g);
  EXPECT_EQ(catalog.Find("node-a", "mlx5-0")->last_updated, 200);
  EXPECT_EQ(catalog.WaitForChange(g, std::chrono::steady_clock::now()), catalog.generation());
}

}  // namespace
}  // namespace rdmak8s::dra
