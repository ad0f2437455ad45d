#include "device-plugin/device_name_index.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rdmak8s::dp {
namespace {

// Names of every length the index keys differently: under 8 bytes (one masked word), exactly 8,
// 9 to 16 (two overlapping words), beyond 16 (compared whole); names that are prefixes of
// others; names with '-' in them; names whose bytes repeat (overlapping words alike).
const std::vector<std::string> kNames = {
    "a",          "ib",          "mlx5_1",           "mlx5_10",        "mlx5_100",
    "mlx5_1000",  "rxe-eth0",    "ibp59s0f1",        "mlx5_bond_0",    "sixteen_bytes_16",
    "aaaaaaaa",   "aaaaaaaaa",   "aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaa",
    "ib_device_with_a_long_name_0", "ib_device_with_a_long_name_1", "x-y-z"};

TEST(DeviceNameIndexTest, FindsEveryNameAtItsPosition) {
  DeviceNameIndex index(kNames);
  for (size_t i = 0; i < kNames.size(); ++i) EXPECT_EQ(index.Find(kNames[i]), static_cast<int>(i)) << kNames[i];
}

TEST(DeviceNameIndexTest, NamesItDoesNotHoldAreNotFound) {
  DeviceNameIndex index(kNames);
  for (const char* stray : {"", "b", "mlx5_", "mlx5_2", "mlx5_1x", "aaaaaaa", "aaaaaaaaaa",
                            "aaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaa", "sixteen_bytes_17",
                            "ib_device_with_a_long_name_2", "ib_device_with_a_long_name_",
                            "rxe-eth", "x-y"}) {
    EXPECT_EQ(index.Find(stray), -1) << stray;
  }
}

TEST(DeviceNameIndexTest, SharedIdIsCutAtItsLastDashWhateverItsLength) {
  DeviceNameIndex index(kNames);
  for (size_t i = 0; i < kNames.size(); ++i) {
    for (const char* k : {"0", "7", "42", "12345", "1234567", "12345678"}) {
      std::string id = kNames[i] + "-" + k;
      EXPECT_EQ(index.DeviceOfSharedId(id), static_cast<int>(i)) << id;
    }
  }
}

TEST(DeviceNameIndexTest, SharedIdsOfNoDeviceAreMinusOne) {
  DeviceNameIndex index(kNames);
  for (const char* stray : {"mlx5_1", "mlx5_1x-0", "mlx5-0", "mlx5_-0", "-1", "-1234567",
                            "b-0", "a0-0", "mlx5_10000-1", "aaaaaaaaaa-3", "rxe-0", "eth0-0",
                            "x-y-", "sixteen_bytes_17-0", "ib_device_with_a_long_name_2-0",
                            "mlx5_1,0", "mlx5_1,,,,,,,,"}) {
    EXPECT_EQ(index.DeviceOfSharedId(stray), -1) << stray;
  }
  // The '-' the fast path looks for is the last one: a ',' (one bit away from '-') next to it
  // must not be taken for one.
  EXPECT_EQ(index.DeviceOfSharedId("x-y-z-,,,,,,"), index.Find("x-y-z"));
  EXPECT_EQ(index.DeviceOfSharedId("mlx5_1-,0"), index.Find("mlx5_1"));
}

TEST(DeviceNameIndexTest, ANameGivenTwiceIsFoundAtItsFirstPosition) {
  DeviceNameIndex index({"mlx5_0", "mlx5_1", "mlx5_0"});
  EXPECT_EQ(index.Find("mlx5_0"), 0);
  EXPECT_EQ(index.DeviceOfSharedId("mlx5_0-3"), 0);
}

TEST(DeviceNameIndexTest, ABigPoolFindsEveryName) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("rocep" + std::to_string(i) + "s0f" + std::to_string(i % 2));
  DeviceNameIndex index(names);
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(index.DeviceOfSharedId(names[i] + "-99"), static_cast<int>(i)) << names[i];
  }
  EXPECT_EQ(index.Find("rocep5000s0f0"), -1);
}

}  // namespace
}  // namespace rdmak8s::dp
