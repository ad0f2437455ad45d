#include "dra/device_name.h"

#include <gtest/gtest.h>

namespace rdmak8s::dra {
namespace {

TEST(DraDeviceNameTest, RealKernelNamesBecomeDnsLabels) {
  EXPECT_EQ(DraDeviceName("mlx5_0"), "mlx5-0");
  EXPECT_EQ(DraDeviceName("rocep65s0f1"), "rocep65s0f1");
  EXPECT_EQ(DraDeviceName("rxe_slot1"), "rxe-slot1");
  EXPECT_EQ(DraDeviceName("_Rxe0_"), "rxe0");
  EXPECT_EQ(DraDeviceName("__"), "");
}

TEST(DraDeviceNameTest, LongNamesKeepTheirHeadAndAHashThatTellsThemApart) {
  std::string a = std::string(70, 'a') + "1", b = std::string(70, 'a') + "2";
  EXPECT_EQ(DraDeviceName(a).size(), kMaxDraDeviceName);
  EXPECT_NE(DraDeviceName(a), DraDeviceName(b));
  EXPECT_EQ(DraDeviceName(a).substr(0, 54), std::string(54, 'a'));
  EXPECT_EQ(DraDeviceName(a), DraDeviceName(a));
}

TEST(DraDeviceNamesTest, SharesAreNamedAndResolvedBackToTheirDevice) {
  DraDeviceNames names({"mlx5_0", "rocep65s0f1"}, 4);
  EXPECT_EQ(names.Name("mlx5_0"), "mlx5-0");
  EXPECT_EQ(names.Name("mlx5_0", 3), "mlx5-0-3");
  EXPECT_EQ(names.Name("mlx5_0", 4), "");
  EXPECT_EQ(names.Resolve("mlx5-0-3"), (DraDeviceRef{"mlx5_0", 3}));
  EXPECT_EQ(names.Resolve("mlx5-0"), (DraDeviceRef{"mlx5_0", std::nullopt}));
  EXPECT_EQ(names.Resolve("rocep65s0f1-0"), (DraDeviceRef{"rocep65s0f1", 0}));
  EXPECT_FALSE(names.Resolve("mlx5-0-4"));
  EXPECT_FALSE(names.Resolve("mlx5-1"));
}

TEST(DraDeviceNamesTest, LongNamesLeaveRoomForTheShareSuffix) {
  std::string dev = std::string(80, 'x');
  DraDeviceNames names({dev}, 12);
  EXPECT_LE(names.Name(dev, 11).size(), kMaxDraDeviceName);
  EXPECT_EQ(names.Resolve(names.Name(dev, 11)), (DraDeviceRef{dev, 11}));
}

TEST(DraDeviceNamesTest, CollisionsGoToTheFirstInByteOrderWhateverTheInputOrder) {
  for (auto devs : {std::vector<std::string>{"mlx5_0", "MLX5-0"},
                    std::vector<std::string>{"MLX5-0", "mlx5_0"}}) {
    DraDeviceNames names(devs, 0);
    EXPECT_EQ(names.Name("MLX5-0"), "mlx5-0");
    EXPECT_EQ(names.Name("mlx5_0"), "");
    ASSERT_EQ(names.notes().size(), 1u);
    EXPECT_NE(names.notes()[0].find("mlx5_0"), std::string::npos);
    EXPECT_NE(names.notes()[0].find("MLX5-0"), std::string::npos);
  }
}

TEST(DraDeviceNamesTest, APlainNameEqualToAnotherDevicesShareNameCollides) {
  DraDeviceNames shared({"x", "x_1"}, 2);
  EXPECT_EQ(shared.Resolve("x-1"), (DraDeviceRef{"x", 1}));
  EXPECT_EQ(shared.Name("x_1"), "");
  DraDeviceNames exclusive({"x", "x_1"}, 0);
  EXPECT_EQ(exclusive.Resolve("x-1"), (DraDeviceRef{"x_1", std::nullopt}));
}

}  // namespace
}  // namespace rdmak8s::dra
