// DeviceTracker over the real SysfsDiscovery reading a copy of a fixture tree, changed in place
// the way the kernel changes /sys.
#include "device-plugin/device_tracker.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;

class DeviceTrackerTest : public ::testing::Test {
 protected:
  void UseFixture(const std::string& name) {
    ASSERT_FALSE(tmp_.path().empty());
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name, sys(""),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    discovery_ = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys(""), nullptr});
    tracker_ = std::make_unique<DeviceTracker>(discovery_.get(), sys(""));
  }
  std::string sys(const std::string& rel) const { return tmp_.path() + "/sys/" + rel; }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(sys(rel)) << text; }

  const TrackedDevice& At(const std::string& dev) { return tracker_->devices().at(dev); }

  testing::TempDir tmp_;
  std::unique_ptr<SysfsDiscovery> discovery_;
  std::unique_ptr<DeviceTracker> tracker_;
};

TEST_F(DeviceTrackerTest, RescanTracksEveryDeviceOfTheNodeWithItsHealth) {
  UseFixture("mlx5_ib_2port");
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_EQ(tracker_->devices().size(), 1u);
  EXPECT_TRUE(At("mlx5_0").health.healthy) << "port 1 is ACTIVE, port 2 DOWN: one usable port";
  EXPECT_EQ(tracker_->Present(), std::vector<std::string>{"mlx5_0"});
}

TEST_F(DeviceTrackerTest, RefreshPortsFollowsPortStateWithoutAFullReRead) {
  UseFixture("mlx5_ib_2port");
  ASSERT_TRUE(tracker_->Rescan().ok());
  Write("class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  ASSERT_TRUE(tracker_->RefreshPorts("mlx5_0"));
  EXPECT_FALSE(At("mlx5_0").health.healthy);
  EXPECT_NE(At("mlx5_0").health.reason.find("port 1 state DOWN"), std::string::npos)
      << At("mlx5_0").health.reason;
  Write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  ASSERT_TRUE(tracker_->RefreshPorts("mlx5_0"));
  EXPECT_TRUE(At("mlx5_0").health.healthy);
}

TEST_F(DeviceTrackerTest, NetdevDownMakesARoceDeviceUnhealthy) {
  UseFixture("rxe_veth");
  ASSERT_TRUE(tracker_->Rescan().ok());
  EXPECT_EQ(tracker_->DevicesOnNetdev("veth0"), std::vector<std::string>{"rxe0"});
  Write("class/net/veth0/operstate", "down\n");
  tracker_->Refresh("rxe0");
  EXPECT_FALSE(At("rxe0").health.healthy);
  EXPECT_EQ(At("rxe0").health.reason, "port 1 netdev veth0 down");
}

TEST_F(DeviceTrackerTest, DeviceThatCannotBeReadIsUnhealthyAndKept) {
  UseFixture("mlx5_ib_2port");
  ASSERT_TRUE(tracker_->Rescan().ok());
  fs::remove(sys("class/infiniband/mlx5_0/node_type"));
  ASSERT_TRUE(tracker_->Rescan().ok());
  ASSERT_EQ(tracker_->devices().count("mlx5_0"), 1u);
  EXPECT_FALSE(At("mlx5_0").health.healthy);
  EXPECT_EQ(At("mlx5_0").health.reason.rfind("unreadable: ", 0), 0u) << At("mlx5_0").health.reason;
}

}  // namespace
}  // namespace rdmak8s::dp
