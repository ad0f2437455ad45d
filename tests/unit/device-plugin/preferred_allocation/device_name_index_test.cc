#include "device-plugin/preferred_allocation/device_name_index.h"

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


// The short names' table (names of 1 to 8 bytes, keyed by their zero-filled first word and
// their length): names that share their first bytes, differ only in length or only in their
// last byte must never be taken for one another, however the ID around them looks.
TEST(DeviceNameIndexTest, ShortNamesThatShareTheirFirstBytesAreToldApart) {
  const std::vector<std::string> names = {"m",        "mm",       "mlx5_1",   "mlx5_10",
                                          "mlx5_100", "mlx5_101", "mlx5_10a", "rxe0",
                                          "irdma3",   "a-b",      "a",        "mlx5_1000"};
  DeviceNameIndex index(names);
  for (size_t i = 0; i < names.size(); ++i) {
    // IDs from 2 bytes after the name up to a '-' 8 bytes from the end, and one where the '-'
    // is further (the general path must agree).
    for (const char* k : {"", "0", "12", "1234567", "123456789"}) {
      std::string id = names[i] + "-" + k;
      EXPECT_EQ(index.DeviceOfSharedId(id), static_cast<int>(i)) << id;
    }
  }
  for (const char* stray : {"mlx5_-0", "mlx5_2-0", "mlx5_11-0", "mlx5_10b-0", "mlx5_100-0-",
                            "mlx5_10-0-x", "rxe-0", "rxe00-0", "a-c-0", "b-0", "mmm-0",
                            "irdma-3", "irdma33-1"}) {
    EXPECT_EQ(index.DeviceOfSharedId(stray), -1) << stray;
  }
  // "a-b-3" is on "a-b", "a-3" on "a": the last '-' cuts.
  EXPECT_EQ(index.DeviceOfSharedId("a-b-3"), 9);
  EXPECT_EQ(index.DeviceOfSharedId("a-3"), 10);
}

TEST(DeviceNameIndexTest, AShortNameIsNotFoundInAnIdWhoseNameHasNulBytesAfterIt) {
  // The zero-filled word of "ab" is that of "ab\0" and "ab\0\0": the length tells them apart.
  const std::string ab_nul("ab\0", 3);
  DeviceNameIndex index({"ab", "mlx5_1"});
  EXPECT_EQ(index.DeviceOfSharedId("ab-00000"), 0);
  EXPECT_EQ(index.DeviceOfSharedId(ab_nul + "-00000"), -1);
  EXPECT_EQ(index.DeviceOfSharedId(std::string("ab\0\0\0\0\0\0-0", 10)), -1);
  EXPECT_EQ(index.DeviceOfSharedId(std::string("mlx5_1\0-0", 9)), -1);
  DeviceNameIndex both({"ab", ab_nul});
  EXPECT_EQ(both.DeviceOfSharedId("ab-00000"), 0);
  EXPECT_EQ(both.DeviceOfSharedId(ab_nul + "-00000"), 1);
  EXPECT_EQ(both.Find(ab_nul), 1);
}

TEST(DeviceNameIndexTest, IdsOfEveryLengthAroundAnEightByteName) {
  // An ID of exactly 8 bytes, of 7 (under a word: the general path), of 16 and 17.
  DeviceNameIndex index({"mlx5_0", "rxe0", "x", "12345678"});
  EXPECT_EQ(index.DeviceOfSharedId("mlx5_0-0"), 0);
  EXPECT_EQ(index.DeviceOfSharedId("rxe0-12"), 1);
  EXPECT_EQ(index.DeviceOfSharedId("x-0"), 2);
  EXPECT_EQ(index.DeviceOfSharedId("x-"), 2);
  EXPECT_EQ(index.DeviceOfSharedId("12345678-1234567"), 3);
  EXPECT_EQ(index.DeviceOfSharedId("12345678-12345678"), 3);
  EXPECT_EQ(index.DeviceOfSharedId("12345678"), -1);
  EXPECT_EQ(index.DeviceOfSharedId("1234567-"), -1);
  EXPECT_EQ(index.DeviceOfSharedId("-"), -1);
  EXPECT_EQ(index.DeviceOfSharedId(""), -1);
  EXPECT_EQ(index.DeviceOfSharedId("--------"), -1);
}

TEST(DeviceNameIndexTest, ABigPoolOfShortNamesFindsEveryNameAndNoNeighbour) {
  // Thousands of names of 1 to 8 bytes: slots collide and are probed past.
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) names.push_back("mlx5_" + std::to_string(i));
  for (int i = 0; i < 1000; ++i) names.push_back("r" + std::to_string(i));
  DeviceNameIndex index(names);
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(lookup(names[i] + "-99"), static_cast<int>(i)) << names[i];
    ASSERT_EQ(lookup(names[i] + "x-99"), -1) << names[i];
  }
  EXPECT_EQ(lookup("mlx5_3000-0"), -1);
  EXPECT_EQ(lookup("r1000-0"), -1);
}

// The short names' table keeps each name in its home slot or not at all, with a multiplier
// chosen when the index is built; names it leaves out, and positions a 16-bit slot cannot hold,
// are the general table's. Whichever table answers, the answer is the same.
std::vector<std::string> MlxNames(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("mlx5_" + std::to_string(i));
  return names;
}

TEST(DeviceNameIndexTest, DeviceLikeNamesAllGetAHomeSlot) {
  // mlx5_0 ... mlx5_1023: alike but for a few bytes; a multiplier that spreads them is found.
  const std::vector<std::string> names = MlxNames(1024);
  DeviceNameIndex index(names);
  EXPECT_EQ(index.ShortNamesLeftOut(), 0u);
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(lookup(names[i] + "-0"), static_cast<int>(i)) << names[i];
    ASSERT_EQ(lookup(names[i] + "-99"), static_cast<int>(i)) << names[i];
  }
  for (const char* stray : {"mlx5_1024-0", "mlx5_01-0", "mlx5_-0", "mlx5_99a-0", "mlx6_1-0"}) {
    EXPECT_EQ(lookup(stray), -1) << stray;
  }
}

TEST(DeviceNameIndexTest, NamesLeftOutOfTheShortTableAreFoundThroughTheGeneralOne) {
  // Short names of arbitrary bytes, more than any multiplier gives home slots of their own.
  std::vector<std::string> names;
  uint64_t x = 12345;
  for (int i = 0; i < 3000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::string name(1 + (x >> 61), 'a');  // 1 to 8 bytes
    for (size_t b = 0; b < name.size(); ++b) name[b] = static_cast<char>('a' + ((x >> (8 * b)) % 26));
    names.push_back(name);
  }
  DeviceNameIndex index(names);
  ASSERT_GT(index.ShortNamesLeftOut(), 0u) << "the case under test: names the short table left out";
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  for (size_t i = 0; i < names.size(); ++i) {
    const int first = index.Find(names[i]);  // a name drawn twice: its first position
    ASSERT_LE(first, static_cast<int>(i));
    ASSERT_EQ(names[static_cast<size_t>(first)], names[i]);
    ASSERT_EQ(lookup(names[i] + "-7"), first) << names[i];
    ASSERT_EQ(index.DeviceOfSharedId(names[i] + "-12345"), first) << names[i];
    ASSERT_EQ(lookup(names[i] + "A-7"), -1) << names[i];  // no name has an upper-case letter
  }
  EXPECT_EQ(lookup("A-0"), -1);
  EXPECT_EQ(lookup("zzzzzzzz0-0"), -1);
}

TEST(DeviceNameIndexTest, NamesOfOneEightAndNineBytesAreToldApart) {
  const std::vector<std::string> names = {"a", "12345678", "123456789", "1234567", "z"};
  DeviceNameIndex index(names);
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  EXPECT_EQ(lookup("a-0000000"), 0);
  EXPECT_EQ(lookup("12345678-0"), 1);
  EXPECT_EQ(lookup("123456789-0"), 2);
  EXPECT_EQ(lookup("1234567-00"), 3);
  EXPECT_EQ(lookup("z-1234567"), 4);
  for (const char* stray : {"b-0000000", "1234568-0", "12345679-0", "1234567890-0", "123456-000",
                            "az-000000", "12345678a-0"}) {
    EXPECT_EQ(lookup(stray), -1) << stray;
  }
}

TEST(DeviceNameIndexTest, ANameEndingInNulIsLeftToTheGeneralTable) {
  // Its zero-filled word is that of the name without the NUL: only the length tells them apart,
  // which the short table does not keep.
  const std::string ab_nul("ab\0", 3), eight_nul("mlx5_1\0\0", 8), nul("\0", 1);
  DeviceNameIndex index({"ab", ab_nul, "mlx5_1", eight_nul, nul});
  EXPECT_EQ(index.ShortNamesLeftOut(), 3u);
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  EXPECT_EQ(lookup("ab-000000"), 0);
  EXPECT_EQ(lookup(ab_nul + "-00000"), 1);
  EXPECT_EQ(lookup("mlx5_1-0"), 2);
  EXPECT_EQ(lookup(eight_nul + "-0"), 3);
  EXPECT_EQ(lookup(nul + "-0000000"), 4);
  EXPECT_EQ(lookup(std::string("ab\0\0-0000", 9)), -1);
  EXPECT_EQ(lookup(std::string("mlx5_1\0-0", 9)), -1);
  EXPECT_EQ(lookup(std::string("\0\0-000000", 9)), -1);
}

TEST(DeviceNameIndexTest, MediumNamesAreToldApartByTheirWordsAndTheirLength) {
  // Names of 9 to 16 bytes are keyed by their first and last 8 bytes, which overlap below 16:
  // names of a repeated byte, or that differ only in length, have the same words.
  const std::string nul_inside("mlx5\0_1000", 10);
  const std::vector<std::string> names = {"aaaaaaaaa",        "aaaaaaaaaa",  "aaaaaaaaaaaaaaaa",
                                          "rocep59s0f0",      "rocep59s0f1", "mlx5_1000",
                                          "sixteen_bytes_16", nul_inside,    "mlx5_bond_0"};
  DeviceNameIndex index(names);
  // The three names of a's have one key: one home slot, the other two left to the general table.
  EXPECT_EQ(index.ShortNamesLeftOut(), 2u);
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(lookup(names[i] + "-0"), static_cast<int>(i)) << names[i];
    EXPECT_EQ(lookup(names[i] + "-1234567"), static_cast<int>(i)) << names[i];
  }
  for (const char* stray : {"aaaaaaaaaaa-0", "aaaaaaaaaaaaaaa-0", "aaaaaaaaaaaaaaaaa-0",
                            "rocep59s0f2-0", "rocep59s1f0-0", "mlx5_1001-0", "sixteen_bytes_17-0",
                            "mlx5_bond_1-0", "mlx5_1000\x01-0"}) {
    EXPECT_EQ(lookup(stray), -1) << stray;
  }
  EXPECT_EQ(lookup(std::string("mlx5\0_1001-0", 12)), -1);
}

TEST(DeviceNameIndexTest, ManyMediumNamesAreAllFound) {
  // udev's RoCE names, thousands: some are left to the general table, every one is found.
  std::vector<std::string> names;
  for (int b = 0; b < 250; ++b) {
    for (int f = 0; f < 8; ++f) names.push_back("rocep" + std::to_string(b) + "s0f" + std::to_string(f));
  }
  DeviceNameIndex index(names);
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(lookup(names[i] + "-42"), static_cast<int>(i)) << names[i];
    ASSERT_EQ(lookup(names[i] + "0-42"), -1) << names[i];
  }
}

TEST(DeviceNameIndexTest, PositionsBeyondSixteenBitsAreFoundThroughTheGeneralTable) {
  std::vector<std::string> names;
  for (int i = 0; i < 70000; ++i) names.push_back("n" + std::to_string(i));
  DeviceNameIndex index(names);
  EXPECT_GE(index.ShortNamesLeftOut(), 70000u - 65535u);
  const DeviceNameIndex::SharedIdLookup lookup = index.SharedIds();
  for (size_t i = 0; i < names.size(); i += 7) {
    ASSERT_EQ(lookup(names[i] + "-0"), static_cast<int>(i)) << names[i];
  }
  for (int i : {65534, 65535, 65536, 69999}) {
    EXPECT_EQ(lookup(names[static_cast<size_t>(i)] + "-1"), i);
  }
  EXPECT_EQ(lookup("n70000-0"), -1);
}

template <typename D, typename Id>
void ExpectDevices(const DeviceNameIndex& index, const std::vector<Id>& ids, D none,
                   const std::vector<D>& want) {
  std::vector<D> dev(ids.size(), 12345);
  index.DevicesOfSharedIds(ids.data(), ids.size(), none, dev.data());
  EXPECT_EQ(dev, want);
}

TEST(DeviceNameIndexTest, DevicesOfSharedIdsGivesEachIdsDevice) {
  DeviceNameIndex index({"mlx5_0", "mlx5_1", "ibp59s0f1", "ib_device_with_a_long_name"});
  const std::vector<std::string> ids = {"mlx5_1-0",   "stray-0", "mlx5_0-3", "ibp59s0f1-1",
                                        "mlx5_1-1",   "mlx5_1",  "",         "ib_device_with_a_long_name-0",
                                        "mlx5_10-0"};
  const std::vector<std::string_view> views(ids.begin(), ids.end());
  ExpectDevices<uint16_t>(index, ids, 4, {1, 4, 0, 2, 1, 4, 4, 3, 4});
  ExpectDevices<uint16_t>(index, views, 4, {1, 4, 0, 2, 1, 4, 4, 3, 4});
  ExpectDevices<uint32_t>(index, ids, 4, {1, 4, 0, 2, 1, 4, 4, 3, 4});
  ExpectDevices<uint32_t>(index, views, 4, {1, 4, 0, 2, 1, 4, 4, 3, 4});
  ExpectDevices<uint16_t>(index, std::vector<std::string>{}, 4, {});
}

}  // namespace
}  // namespace rdmak8s::dp
