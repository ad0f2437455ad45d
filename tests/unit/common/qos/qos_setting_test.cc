// The QoS setting table: keys in the format records of every release hold (a fixture of the
// bytes written before the table existed), and each kind read and written where it lives.
#include "rdmak8s/qos/qos_setting.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "fakes/fake_dcb_netlink.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s {
namespace {

// A fixture's bytes.
std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST(QosSettingTest, EveryKeyOfAKnobsJsonWrittenBeforeTheTableNamesTheSameSettingAndRoundTrips) {
  const std::string text = Slurp(std::string(RDMAK8S_FIXTURES_DIR) + "/cni_state/v0.1/knobs.json");
  auto j = nlohmann::json::parse(text);
  ASSERT_EQ(j.size(), 7u);
  for (const auto& [key, v] : j.items()) {
    auto s = QosSetting::FromKey(key);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->Key(), key);
  }
  EXPECT_EQ(std::get<PfcSetting>(QosSetting::FromKey("pfc:pf0:3")->kind()).priority, 3);
  EXPECT_EQ(std::get<AppSetting>(QosSetting::FromKey("app:pf0:26")->kind()).dscp, 26);
  auto ecn = std::get<EcnSetting>(QosSetting::FromKey("ecn:pf0:np:3")->kind());
  EXPECT_EQ(ecn.pf, "pf0");
  EXPECT_EQ(ecn.point, EcnPoint::kNp);
  EXPECT_EQ(std::get<TcSetting>(QosSetting::FromKey("tc:mlx5_0:1")->kind()).rdma_dev, "mlx5_0");
  EXPECT_EQ(std::get<TosSetting>(QosSetting::FromKey("tos:mlx5_0:1")->kind()).port, 1u);
}

TEST(QosSettingTest, ThePolicysSettingsHaveTheKeysOfEarlierReleases) {
  // The qos block of the netconf that record's ADD had.
  auto q = ParseQosPolicy(nlohmann::json::parse(
      R"({"trust": "dscp", "pfc": [3], "dscpToPriority": {"26": 3}, "ecn": [3], "roceTos": 106,
          "trafficClass": 106})"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  std::map<std::string, std::string> by_key;
  for (const auto& [s, v] : QosSettingsFor(*q, "pf0", "mlx5_0", {1})) by_key[s.Key()] = v;
  // The record of the fixture: what an ADD of this policy wrote before the table existed.
  auto rec = nlohmann::json::parse(
      Slurp(std::string(RDMAK8S_FIXTURES_DIR) + "/cni_state/v0.1/attachments/rdma/c1:net1.json"));
  EXPECT_EQ(by_key, rec["knobs"].get<decltype(by_key)>());
}

TEST(QosSettingTest, AKeyThatNamesNoSettingIsInvalidArgumentNamingIt) {
  for (const char* key : {"bogus:x", "pfc:pf0", "pfc:pf0:8", "app:pf0:64", "ecn:pf0:xp:3",
                          "ecn:pf0:rp:9", "trust:", "tc:mlx5_0:one", "pfc:pf0:3:4"}) {
    auto s = QosSetting::FromKey(key);
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(s.status().message().find(key), std::string::npos) << s.status().ToString();
  }
}

TEST(QosSettingTest, NodeWideAndDcbSettingsAreTheKindsOfThePf) {
  EXPECT_TRUE(QosSetting(PfcSetting{"pf0", 3}).node_wide());
  EXPECT_TRUE(QosSetting(PfcSetting{"pf0", 3}).dcb());
  EXPECT_TRUE(QosSetting(EcnSetting{"pf0", EcnPoint::kRp, 3}).node_wide());
  EXPECT_FALSE(QosSetting(EcnSetting{"pf0", EcnPoint::kRp, 3}).dcb());
  EXPECT_FALSE(QosSetting(TosSetting{"mlx5_0", 1}).node_wide());
  EXPECT_EQ(QosSetting(TcSetting{"mlx5_0", 1}).sysfs_device(), "mlx5_0");
  EXPECT_EQ(QosSetting(TosSetting{"mlx5_0", 1}).sysfs_device(), "") << "tos lives in configfs";
}

TEST(QosSettingTest, EcnIsReadAndWrittenInThePfsSysfsAtThePathItNames) {
  testing::TempDir t;
  QosSettingContext ctx;
  ctx.sysfs_root = t.path();
  const QosSetting ecn = EcnSetting{"pf0", EcnPoint::kNp, 3};
  EXPECT_EQ(ecn.FilePath(ctx), t.path() + "/class/net/pf0/ecn/roce_np/enable/3");
  EXPECT_EQ(ecn.Read(ctx).status().code(), StatusCode::kUnimplemented) << "no ecn directory";
  ASSERT_EQ(system(("mkdir -p " + t.path() + "/class/net/pf0/ecn/roce_np/enable && echo 0 > " +
                    ecn.FilePath(ctx)).c_str()), 0);
  EXPECT_EQ(*ecn.Read(ctx), "0");
  ASSERT_TRUE(ecn.Write(ctx, "1").ok());
  EXPECT_EQ(*ecn.Read(ctx), "1");
  EXPECT_EQ(QosSetting(PfcSetting{"pf0", 3}).FilePath(ctx), "") << "DCB lives in no file";
}

TEST(QosSettingTest, PfcWritesItsOwnBitOnly) {
  FakeDcbNetlink dcb;
  dcb.AddNetdev("pf0").pfc.enabled = 1 << 5;
  QosSettingContext ctx{&dcb, "", "", ""};
  const QosSetting pfc = PfcSetting{"pf0", 3};
  EXPECT_EQ(*pfc.Read(ctx), "off");
  ASSERT_TRUE(pfc.Write(ctx, "on").ok());
  EXPECT_EQ(dcb.Find("pf0")->pfc.enabled, (1 << 3) | (1 << 5));
  QosSettingContext no_dcb;
  EXPECT_EQ(pfc.Read(no_dcb).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace rdmak8s
