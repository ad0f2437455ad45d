// The GID slot reader and the GID search (rdmak8s/device/gid_table.h) on a copy of a kernel-shaped
// fixture (tests/fixtures/sysfs/mlx5_roce_sriov): mlx5_0 port 1 has its defaults at 0 and 1,
// three IPv4 GIDs (RoCE v1 and v2) at 2..7 and slot 8 free, of 16.
#include "rdmak8s/device/gid_table.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "rdmak8s/device/roce_gid.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;

const std::string kZero = "0000:0000:0000:0000:0000:0000:0000:0000";

class GidTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    node_ = tmp_.path() + "/node";
    std::error_code ec;
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_roce_sriov", node_,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    ASSERT_FALSE(ec) << ec.message();
  }
  std::string port(const std::string& dev) { return node_ + "/class/infiniband/" + dev + "/ports/1"; }
  void Write(const std::string& path, const std::string& text) {
    fs::remove(path);
    std::ofstream(path) << text << "\n";
    ASSERT_TRUE(fs::exists(path)) << path;
  }
  // A slot whose file is a directory: any read of it fails (EISDIR), which is what a search
  // must not need.
  void Unreadable(const std::string& path) {
    fs::remove(path);
    fs::create_directories(path);
  }
  GidTable Open(const std::string& dev) {
    auto t = GidTable::Open(port(dev), "Ethernet", false);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(t).value();
  }

  testing::TempDir tmp_;
  std::string node_;
};

TEST(GidTypeOfTest, IbRoceV1MeansIbOnInfinibandRoceV1OnEthernetAndNeitherOnIwarp) {
  EXPECT_EQ(GidTypeOf("IB/RoCE v1", "InfiniBand", false), GidType::kIb);
  EXPECT_EQ(GidTypeOf("IB/RoCE v1", "Ethernet", false), GidType::kRoceV1);
  EXPECT_EQ(GidTypeOf("IB/RoCE v1", "Ethernet", true), GidType::kUnknown);
  EXPECT_EQ(GidTypeOf("IB/RoCE v1", "", false), GidType::kUnknown);
  EXPECT_EQ(GidTypeOf("RoCE v2", "", false), GidType::kRoceV2);
  EXPECT_EQ(GidTypeOf("", "InfiniBand", false), GidType::kIb);
  EXPECT_EQ(GidTypeOf("", "Ethernet", false), GidType::kUnknown);
}

TEST_F(GidTableTest, ReadAllGivesThePopulatedSlotsInIndexOrderWithTypeAndNetdev) {
  auto all = Open("mlx5_0").ReadAll();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 8u) << "slots 0..7; 8..15 are the zero GID";
  for (uint32_t i = 0; i < all->size(); ++i) EXPECT_EQ((*all)[i].index, i);
  EXPECT_EQ((*all)[0].type, GidType::kRoceV1);
  EXPECT_EQ((*all)[1].type, GidType::kRoceV2);
  EXPECT_EQ((*all)[5].gid, GidForIp("192.168.100.1"));
  EXPECT_FALSE((*all)[5].netdev.empty());
}

TEST_F(GidTableTest, ATableReadThroughItsOpenPortDirectoryReadsTheSame) {
  auto port_dir = SysfsDir::Open(port("mlx5_0"));
  ASSERT_TRUE(port_dir.ok()) << port_dir.status().ToString();
  GidTable of_port = GidTable::OfPort(*port_dir, "Ethernet", false);
  auto a = of_port.ReadAll();
  auto b = Open("mlx5_0").ReadAll();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].gid, (*b)[i].gid);
    EXPECT_EQ((*a)[i].type, (*b)[i].type);
    EXPECT_EQ((*a)[i].netdev, (*b)[i].netdev);
  }
  auto r = of_port.Search({GidForIp("192.168.100.1")}, GidType::kRoceV2, GidScope::kFilledPrefix);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->found.at(GidForIp("192.168.100.1")), 5u);
  Unreadable(port("mlx5_0") + "/gid_attrs/types/5");
  auto bad = of_port.ReadAll();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(port("mlx5_0") + "/gid_attrs/types/5"), std::string::npos)
      << bad.status().ToString();
}

// ReadGids, its predecessor, gave such a GID the type "" and went on.
TEST_F(GidTableTest, AnUnreadableTypeOfAWantedGidIsAnErrorNamingItsPath) {
  Unreadable(port("mlx5_0") + "/gid_attrs/types/5");
  auto r = Open("mlx5_0").Search({GidForIp("192.168.100.1")}, GidType::kRoceV2,
                                 GidScope::kFilledPrefix);
  ASSERT_FALSE(r.ok()) << "found " << r->found.size();
  EXPECT_NE(r.status().message().find(port("mlx5_0") + "/gid_attrs/types/5"), std::string::npos)
      << r.status().ToString();
  auto all = Open("mlx5_0").ReadAll();
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("gid_attrs/types/5"), std::string::npos)
      << all.status().ToString();
}

TEST_F(GidTableTest, AnUnreadableNetdevIsAnErrorOfReadAllButNotOfTheSearch) {
  Unreadable(port("mlx5_0") + "/gid_attrs/ndevs/5");
  auto all = Open("mlx5_0").ReadAll();
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("gid_attrs/ndevs/5"), std::string::npos)
      << all.status().ToString();
  auto r = Open("mlx5_0").Search({GidForIp("192.168.100.1")}, GidType::kRoceV2,
                                 GidScope::kFilledPrefix);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->found.at(GidForIp("192.168.100.1")), 5u);
}

TEST_F(GidTableTest, ATypeTheKernelDoesNotShowIsNoTypeNotAnError) {
  // EINVAL (a GID freed meanwhile) reads like a missing file here: no type, so no match.
  fs::remove(port("mlx5_0") + "/gid_attrs/types/5");
  auto r = Open("mlx5_0").Search({GidForIp("192.168.100.1")}, GidType::kRoceV2,
                                 GidScope::kWholeTable);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->found.empty());
}

TEST_F(GidTableTest, AGidTextThatIsNotAGidIsAnErrorNamingItsPath) {
  Write(port("mlx5_0") + "/gids/3", "not a gid");
  auto r = Open("mlx5_0").Search({GidForIp("10.9.9.9")}, GidType::kRoceV2, GidScope::kWholeTable);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(port("mlx5_0") + "/gids/3"), std::string::npos)
      << r.status().ToString();
}

TEST_F(GidTableTest, AWholeTableSearchReadsUpToTheLastWantedGidAcrossHoles) {
  // mlx5_1: index 2 a hole (a deleted address), the pod's IPv4 GID at 4 (RoCE v1) and 5 (RoCE v2).
  const std::string p = port("mlx5_1");
  Write(p + "/gids/2", kZero);
  fs::remove(p + "/gid_attrs/types/2");
  Write(p + "/gids/3", GidForIp("10.1.0.9"));
  Write(p + "/gid_attrs/types/3", "RoCE v2");
  Write(p + "/gids/4", GidForIp("10.1.0.7"));
  Write(p + "/gid_attrs/types/4", "IB/RoCE v1");
  Write(p + "/gids/5", GidForIp("10.1.0.7"));
  Write(p + "/gid_attrs/types/5", "RoCE v2");
  // Entries past the last wanted one cannot be read: the search must not need them.
  for (int i = 6; i < 16; ++i) Unreadable(p + "/gids/" + std::to_string(i));
  GidTable t = Open("mlx5_1");
  auto found = t.Search({GidForIp("10.1.0.7")}, GidType::kRoceV2, GidScope::kWholeTable);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->found, (std::map<std::string, uint32_t>{{GidForIp("10.1.0.7"), 5}}));
  // A GID that is not there needs the whole table (holes), and says what it could not read.
  auto absent = t.Search({GidForIp("10.1.0.8")}, GidType::kRoceV2, GidScope::kWholeTable);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find(p + "/gids/"), std::string::npos)
      << absent.status().ToString();
  auto none = Open("mlx5_2").Search({GidForIp("10.1.0.8")}, GidType::kRoceV2, GidScope::kWholeTable);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->found.empty());
}

TEST_F(GidTableTest, AFilledPrefixSearchStopsAtTheFirstFreeSlotAndReadsNothingPastIt) {
  // Every slot past the free slot 8 is unreadable, so the search must not need them.
  for (int i = 9; i < 16; ++i) Unreadable(port("mlx5_0") + "/gids/" + std::to_string(i));
  GidTable t = Open("mlx5_0");
  auto present = t.Search({GidForIp("192.168.100.1")}, GidType::kRoceV2, GidScope::kFilledPrefix);
  ASSERT_TRUE(present.ok()) << present.status().ToString();
  EXPECT_EQ(present->found, (std::map<std::string, uint32_t>{{GidForIp("192.168.100.1"), 5}}));
  EXPECT_EQ(present->slots_read, 6u) << "stops at the last wanted GID";

  auto missing = t.Search({GidForIp("10.9.9.9")}, GidType::kRoceV2, GidScope::kFilledPrefix);
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_TRUE(missing->found.empty());
  EXPECT_EQ(missing->first_free, 8u);
  EXPECT_EQ(missing->slots_read, 9u) << "0..7 and the free slot 8, nothing past it";
  EXPECT_FALSE(t.Search({GidForIp("10.9.9.9")}, GidType::kRoceV2, GidScope::kWholeTable).ok())
      << "the whole table does read past the free slot";
}

TEST_F(GidTableTest, AFreeDefaultSlotDoesNotEndTheFilledPrefix) {
  // A port whose default GID slots are empty (its netdev had no MAC-based GID yet): the
  // kernel never puts another GID there, so the prefix goes on to the first free slot past them.
  Write(port("mlx5_0") + "/gids/0", kZero);
  Write(port("mlx5_0") + "/gids/1", kZero);
  auto r = Open("mlx5_0").Search({GidForIp("192.168.10.50")}, GidType::kRoceV2,
                                 GidScope::kFilledPrefix);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->found, (std::map<std::string, uint32_t>{{GidForIp("192.168.10.50"), 7}}));
}

TEST_F(GidTableTest, AFilledPrefixOfAFullTableEndsWhereTheSlotsEnd) {
  for (int i = 8; i < 16; ++i) {
    Write(port("mlx5_0") + "/gids/" + std::to_string(i), GidForIp("10.0.1." + std::to_string(i)));
  }
  auto r = Open("mlx5_0").Search({GidForIp("10.9.9.9")}, GidType::kRoceV2, GidScope::kFilledPrefix);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->first_free, 16u);
  EXPECT_EQ(r->slots_read, 16u);
}

TEST_F(GidTableTest, APortWithoutAGidTableIsNotFound) {
  fs::remove_all(port("mlx5_0") + "/gids");
  EXPECT_EQ(GidTable::Open(port("mlx5_0")).status().code(), StatusCode::kNotFound);
}

TEST(GidMatchesTest, MatchesTheGidWhateverItsSpellingAndOnlyOfTheType) {
  GidEntry e;
  e.gid = "0000:0000:0000:0000:0000:FFFF:0A00:0002";
  e.type = GidType::kRoceV2;
  EXPECT_TRUE(GidMatches(e, GidForIp("10.0.0.2"), GidType::kRoceV2));
  EXPECT_FALSE(GidMatches(e, GidForIp("10.0.0.2"), GidType::kRoceV1));
  EXPECT_FALSE(GidMatches(e, GidForIp("10.0.0.3"), GidType::kRoceV2));
}

}  // namespace
}  // namespace rdmak8s
