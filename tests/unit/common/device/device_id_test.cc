#include "rdmak8s/device/device_id.h"

#include <gtest/gtest.h>

namespace rdmak8s {
namespace {

TEST(DeviceIdTest, PciAddressesHaveADomainAndHexDigits) {
  EXPECT_TRUE(IsPciAddress("0000:3b:00.2"));
  EXPECT_TRUE(IsPciAddress("abcd:ef:1f.7"));
  EXPECT_FALSE(IsPciAddress("3b:00.2")) << "no domain";
  EXPECT_FALSE(IsPciAddress("0000:3b:00:2"));
  EXPECT_FALSE(IsPciAddress("0000:3g:00.2"));
  EXPECT_FALSE(IsPciAddress("mlx5_0"));
}

TEST(DeviceIdTest, AuxiliaryDevicesAreModuleNameAndId) {
  EXPECT_TRUE(IsAuxiliaryDeviceName("mlx5_core.sf.2"));
  EXPECT_TRUE(IsAuxiliaryDeviceName("mlx5_core.rdma.0"));
  EXPECT_FALSE(IsAuxiliaryDeviceName("mlx5_core.sf")) << "no id";
  EXPECT_FALSE(IsAuxiliaryDeviceName("sf.2")) << "no module";
  EXPECT_FALSE(IsAuxiliaryDeviceName(".sf.2"));
  EXPECT_FALSE(IsAuxiliaryDeviceName("mlx5_core..2"));
  EXPECT_FALSE(IsAuxiliaryDeviceName("0000:3b:00.2"));
  EXPECT_FALSE(IsAuxiliaryDeviceName("mlx5_0"));
  EXPECT_TRUE(IsBusDeviceId("0000:3b:00.2"));
  EXPECT_TRUE(IsBusDeviceId("mlx5_core.sf.2"));
  EXPECT_FALSE(IsBusDeviceId("rxe_slot1"));
}

TEST(DeviceIdTest, RdmaDeviceNamesRefuseNulControlBytesAndPathParts) {
  using namespace std::string_view_literals;
  EXPECT_TRUE(IsRdmaDeviceName("mlx5_0"));
  EXPECT_TRUE(IsRdmaDeviceName("rxe-slot-12"));
  EXPECT_TRUE(IsRdmaDeviceName(std::string(63, 'a'))) << "IB_DEVICE_NAME_MAX - 1 bytes";
  EXPECT_FALSE(IsRdmaDeviceName(std::string(64, 'a'))) << "longer than the kernel's buffer";
  // A NUL cuts the path the kernel sees: class/infiniband/mlx5_0\0alias opens mlx5_0.
  EXPECT_FALSE(IsRdmaDeviceName("mlx5_0\0alias"sv));
  EXPECT_FALSE(IsRdmaDeviceName("mlx5_0\0"sv));
  EXPECT_FALSE(IsRdmaDeviceName("mlx5_0\n"));
  EXPECT_FALSE(IsRdmaDeviceName("mlx5\t0"));
  EXPECT_FALSE(IsRdmaDeviceName("mlx5_0\x1b[2J"));
  EXPECT_FALSE(IsRdmaDeviceName("mlx5_0\x7f"));
  EXPECT_FALSE(IsRdmaDeviceName(""));
  EXPECT_FALSE(IsRdmaDeviceName("."));
  EXPECT_FALSE(IsRdmaDeviceName(".."));
  EXPECT_FALSE(IsRdmaDeviceName("../mlx5_0"));
  EXPECT_FALSE(IsRdmaDeviceName("mlx5_0/device"));
  EXPECT_FALSE(IsAuxiliaryDeviceName("mlx5_core\0.sf.2"sv));
  EXPECT_FALSE(IsBusDeviceId("mlx5_core.sf\n.2"));
}

TEST(DeviceIdTest, SharedIdsRoundTripToTheirDevice) {
  EXPECT_EQ(SharedDeviceId("mlx5_0", 3), "mlx5_0-3");
  EXPECT_EQ(SharedDeviceIdDevice("mlx5_0-3"), "mlx5_0");
  EXPECT_EQ(SharedDeviceIdDevice("rxe-slot-12"), "rxe-slot");
  EXPECT_EQ(SharedDeviceIdDevice("mlx5_0"), std::nullopt);
  EXPECT_EQ(SharedDeviceIdDevice("mlx5_0-"), std::nullopt);
  EXPECT_EQ(SharedDeviceIdDevice("-3"), std::nullopt);
  EXPECT_EQ(SharedDeviceIdDevice("mlx5_0-3a"), std::nullopt);
}

TEST(DeviceIdTest, AnExclusiveIdIsTheBusDeviceUnlessItIsSharedOrAbsent) {
  EXPECT_EQ(ExclusiveDeviceId("mlx5_1", "0000:5e:00.2", false), "0000:5e:00.2");
  EXPECT_EQ(ExclusiveDeviceId("mlx5_3", "mlx5_core.sf.2", false), "mlx5_core.sf.2");
  EXPECT_EQ(ExclusiveDeviceId("mlx5_0", "0000:3b:00.0", true), "mlx5_0")
      << "two RDMA drivers on one function";
  EXPECT_EQ(ExclusiveDeviceId("rxe0", "", false), "rxe0");
}

}  // namespace
}  // namespace rdmak8s
