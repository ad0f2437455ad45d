// HealthChangeLimit: a flapping device's published health changes at most max_changes times a
// window, the last health always gets out, and other devices are not held by it.
#include "dra/api/health_change_limit.h"

#include <gtest/gtest.h>

namespace rdmak8s::dra {
namespace {

using namespace std::chrono_literals;
using Clock = HealthChangeLimit::Clock;

DeviceInput Device(const std::string& name, bool healthy, const std::string& reason = "PortDown") {
  DeviceInput in;
  in.device.name = name;
  in.healthy = healthy;
  in.unhealthy_reason = healthy ? "" : reason;
  return in;
}

TEST(HealthChangeLimitTest, AFlappingPortChangesItsPublishedHealthAtMostMaxChangesAWindow) {
  HealthChangeLimit limit({.max_changes = 4, .window = 60s});
  const Clock::time_point t0{};
  ASSERT_TRUE(limit.Apply({Device("mlx5_0", true)}, t0)[0].healthy);
  int published_changes = 0;
  bool last_published = true;
  // 20 flaps, one a second: down, up, down, ...
  for (int i = 1; i <= 20; ++i) {
    const bool healthy = i % 2 == 0;
    const DeviceInput out = limit.Apply({Device("mlx5_0", healthy)}, t0 + i * 1s)[0];
    if (out.healthy != last_published) ++published_changes;
    last_published = out.healthy;
  }
  EXPECT_EQ(published_changes, 4);
  EXPECT_EQ(limit.changes_let_through(), 4u);
  // The last flap (healthy again) is what the port says now; it is held, and said when it goes.
  EXPECT_EQ(limit.held(), 0) << "up, as published after 4 changes";
  const DeviceInput down = limit.Apply({Device("mlx5_0", false)}, t0 + 21s)[0];
  EXPECT_TRUE(down.healthy) << "a fifth change within the minute is held";
  EXPECT_EQ(limit.held(), 1);
  ASSERT_TRUE(limit.next_release().has_value());
  EXPECT_EQ(*limit.next_release(), t0 + 1s + 60s) << "when the oldest change leaves the window";
  const DeviceInput released = limit.Apply({Device("mlx5_0", false)}, *limit.next_release())[0];
  EXPECT_FALSE(released.healthy);
  EXPECT_EQ(released.unhealthy_reason, "PortDown");
  EXPECT_EQ(limit.held(), 0);
  EXPECT_FALSE(limit.next_release().has_value());
}

TEST(HealthChangeLimitTest, AHeldChangeThatRevertsIsNoLongerHeld) {
  HealthChangeLimit limit({.max_changes = 1, .window = 60s});
  const Clock::time_point t0{};
  limit.Apply({Device("mlx5_0", true)}, t0);
  EXPECT_FALSE(limit.Apply({Device("mlx5_0", false)}, t0 + 1s)[0].healthy);
  EXPECT_FALSE(limit.Apply({Device("mlx5_0", true)}, t0 + 2s)[0].healthy) << "held";
  EXPECT_EQ(limit.changes_held(), 1u);
  EXPECT_FALSE(limit.Apply({Device("mlx5_0", false)}, t0 + 3s)[0].healthy) << "as published";
  EXPECT_EQ(limit.held(), 0);
  EXPECT_FALSE(limit.next_release().has_value());
}

TEST(HealthChangeLimitTest, OneFlappingDeviceHoldsNoOtherAndANewReasonIsAChange) {
  HealthChangeLimit limit({.max_changes = 1, .window = 60s});
  const Clock::time_point t0{};
  limit.Apply({Device("mlx5_0", true), Device("mlx5_1", true)}, t0);
  limit.Apply({Device("mlx5_0", false), Device("mlx5_1", true)}, t0 + 1s);
  auto out = limit.Apply({Device("mlx5_0", false, "NetdevDown"), Device("mlx5_1", false)}, t0 + 2s);
  EXPECT_EQ(out[0].unhealthy_reason, "PortDown") << "mlx5_0's new reason is its second change";
  EXPECT_FALSE(out[1].healthy) << "mlx5_1's first change goes at once";
  EXPECT_EQ(limit.held(), 1);
}

TEST(HealthChangeLimitTest, ADeviceSeenFirstPassesAsItIsAndAGoneOneIsForgotten) {
  HealthChangeLimit limit({.max_changes = 1, .window = 60s});
  const Clock::time_point t0{};
  EXPECT_FALSE(limit.Apply({Device("mlx5_0", false)}, t0)[0].healthy);
  limit.Apply({Device("mlx5_0", true)}, t0 + 1s);
  limit.Apply({}, t0 + 2s);
  // Back (hot-plug): a new device, not a third change.
  EXPECT_FALSE(limit.Apply({Device("mlx5_0", false)}, t0 + 3s)[0].healthy);
  EXPECT_EQ(limit.held(), 0);
}

}  // namespace
}  // namespace rdmak8s::dra
