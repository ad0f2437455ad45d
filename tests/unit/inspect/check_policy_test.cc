// What the node check judges against: the device plugin's config and the CNI's netconf, read by
// their own parsers.
#include "check_policy.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "check.h"
#include "support/temp_dir.h"

namespace rdmak8s::inspect {
namespace {

TEST(CheckPolicyTest, BareQosBlockIsParsedByTheCnisParser) {
  auto nc = ParseQosArg(R"({"trust":"dscp","roceTos":106,"pfc":[3]})");
  ASSERT_TRUE(nc.ok()) << nc.status().ToString();
  EXPECT_EQ(nc->qos.trust, "dscp");
  EXPECT_EQ(nc->qos.roce_tos, 106);
  EXPECT_EQ(nc->qos.pfc, std::vector<uint8_t>{3});
}

TEST(CheckPolicyTest, WholeNetconfGivesItsPkeyAndNetnsModeToo) {
  auto nc = ParseQosArg(
      R"({"cniVersion":"1.0.0","name":"ib","type":"rdmak8s","pkey":"8001","netnsMode":"exclusive"})");
  ASSERT_TRUE(nc.ok()) << nc.status().ToString();
  EXPECT_EQ(nc->pkey, 0x8001);
  EXPECT_EQ(nc->netns_mode, "exclusive");
}

TEST(CheckPolicyTest, InvalidQosIsRefusedWithTheCnisMessage) {
  auto nc = ParseQosArg(R"({"trust":"dscp","pfc":[9]})");
  ASSERT_FALSE(nc.ok());
  EXPECT_EQ(nc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nc.status().message().find("$.qos.pfc[0]: 9 is not a priority 0..7"), std::string::npos)
      << nc.status().ToString();
  EXPECT_FALSE(ParseQosArg("[1]").ok());
  EXPECT_FALSE(ParseQosArg("not json").ok());
}

TEST(CheckPolicyTest, IntentMergesBlocksAndNamesMapConflicts) {
  CheckPolicy p;
  int n = 0;
  for (const char* q : {R"({"roceTos":106,"dscpToPriority":{"26":3},"pfc":[3]})",
                        R"({"trafficClass":96,"dscpToPriority":{"26":4},"ecn":[3]})"}) {
    auto nc = ParseQosArg(q, "qos-" + std::to_string(++n));
    ASSERT_TRUE(nc.ok());
    p.netconfs.push_back(*nc);
  }
  RoceIntent i = RoceIntentOf(p);
  EXPECT_TRUE(i.any);
  EXPECT_EQ(i.dscps, (std::set<uint8_t>{24, 26}));
  EXPECT_EQ(i.pfc, std::set<uint8_t>{3});
  EXPECT_EQ(i.ecn, std::set<uint8_t>{3});
  ASSERT_EQ(i.map_conflicts.size(), 1u);
  EXPECT_EQ(i.map_conflicts[0], "DSCP 26 -> 3 (qos-1) and -> 4 (qos-2)");
}

TEST(CheckPolicyTest, HugepageSizesInTheUsualSpellings) {
  auto a = ParseHugepageNeed("2M=512");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size_kb, 2048u);
  EXPECT_EQ(a->count, 512u);
  EXPECT_EQ(ParseHugepageNeed("1G=4")->size_kb, 1048576u);
  EXPECT_EQ(ParseHugepageNeed("2048kB=1")->size_kb, 2048u);
  for (const char* bad : {"2M", "=4", "2M=", "2X=4", "M=4", "2M=-1"}) {
    EXPECT_FALSE(ParseHugepageNeed(bad).ok()) << bad;
  }
}

TEST(CheckPolicyTest, ConfigFileIsTheDevicePluginsAndItsErrorsNameTheFlag) {
  rdmak8s::testing::TempDir tmp;
  const std::string path = tmp.path() + "/config.json";
  std::ofstream(path) << R"({"pools":[{"name":"p","mode":"exclusive","selectors":{}}]})";
  CheckInputs in;
  in.config_path = path;
  auto p = LoadPolicy(in);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->plugin_config);
  EXPECT_EQ(p->plugin_config->pools[0].mode, dp::PoolMode::kExclusive);

  std::ofstream(path) << R"({"pools":[{"name":"p","colour":"red","selectors":{}}]})";
  auto bad = LoadPolicy(in);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--config"), std::string::npos);
  EXPECT_NE(bad.status().message().find("$.pools[0].colour: unknown field"), std::string::npos)
      << bad.status().ToString();
}

// --qos-file is read by the one safe reader: a FIFO at the path is refused at once (an ifstream
// would wait for a writer for ever), a file over 1 MiB is refused unread, and a ConfigMap's link
// into ..data/ is followed.
TEST(CheckPolicyTest, QosFileThatIsAFifoOrTooBigIsRefusedNamingItAndALinkIsFollowed) {
  rdmak8s::testing::TempDir dir;
  const std::string fifo = dir.path() + "/qos.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CheckInputs in;
  in.qos_files = {fifo};
  auto p = LoadPolicy(in);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(p.status().message(), "--qos-file " + fifo + ": not a regular file");

  const std::string big = dir.path() + "/qos-big.json";
  std::ofstream(big) << "{\"pfc\":[3]," << std::string(size_t{1} << 20, ' ') << "}";
  in.qos_files = {big};
  p = LoadPolicy(in);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "--qos-file " + big + ": larger than 1048576 bytes");

  std::ofstream(dir.path() + "/qos.json") << R"({"pfc":[3]})";
  const std::string link = dir.path() + "/qos-link.json";
  ASSERT_EQ(symlink("qos.json", link.c_str()), 0);
  in.qos_files = {link};
  p = LoadPolicy(in);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->netconfs.size(), 1u);
}

TEST(CheckPolicyTest, FlagsOutOfRangeAreRefused) {
  CheckInputs in;
  in.allow_pfc = {8};
  EXPECT_EQ(LoadPolicy(in).status().code(), StatusCode::kInvalidArgument);
  in = {};
  in.memlock_min = "lots";
  EXPECT_EQ(LoadPolicy(in).status().code(), StatusCode::kInvalidArgument);
  in = {};
  in.qos_files = {"/nonexistent/qos.json"};
  EXPECT_FALSE(LoadPolicy(in).ok());
}

TEST(CheckPolicyTest, FabricMtuBareAndPerNetdev) {
  CheckInputs in;
  in.fabric_mtu = {"9000", "ens1f0np0=4200"};
  auto p = LoadPolicy(in);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->fabric_mtu.For("ens1f0np0"), 4200u);
  EXPECT_EQ(p->fabric_mtu.For("ens2f0np0"), 9000u);
  EXPECT_FALSE(FabricMtu{}.For("ens1f0np0").has_value());
}

TEST(CheckPolicyTest, FabricMtuThatIsNoMtuOrTwiceForOneNetdevIsRefusedNamingIt) {
  for (const char* bad : {"", "=1500", "jumbo", "ens1=", "ens1=67", "65536", "a/b=1500",
                          "a-netdev-name-too-long=1500", "1500x"}) {
    FabricMtu m;
    Status s = ParseFabricMtu(bad, m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find(std::string("--fabric-mtu \"") + bad + "\""), std::string::npos)
        << s.message();
  }
  FabricMtu m;
  ASSERT_TRUE(ParseFabricMtu("ens1=1500", m).ok());
  EXPECT_TRUE(ParseFabricMtu("ens1=1500", m).ok());  // the same again is no conflict
  EXPECT_NE(ParseFabricMtu("ens1=9000", m).message().find("a second fabric MTU for ens1"),
            std::string::npos);
  ASSERT_TRUE(ParseFabricMtu("1500", m).ok());
  EXPECT_FALSE(ParseFabricMtu("9000", m).ok());
  CheckInputs in;
  in.fabric_mtu = {"9000", "4200"};
  EXPECT_EQ(LoadPolicy(in).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdmak8s::inspect
