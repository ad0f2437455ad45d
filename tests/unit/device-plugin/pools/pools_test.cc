#include "device-plugin/pools/pools.h"

#include <gtest/gtest.h>

#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dp {
namespace {

using namespace testdev;

PluginConfig Config(std::string_view json) {
  auto cfg = ParseConfig(json);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  return cfg.value_or(PluginConfig{});
}

std::vector<RdmaDevice> Mixed() {
  RdmaDevice pf = Roce("mlx5_0", 0, "ens1f0np0", "0000:5e:00.0", 1);
  RdmaDevice vf = Roce("mlx5_1", 1, "ens1f0v0", "0000:5e:00.2", 1);
  vf.parent.pci->is_vf = true;
  vf.parent.pci->pf_address = "0000:5e:00.0";
  vf.parent.pci->device_id = 0x101e;
  RdmaDevice bnxt = Roce("bnxt_re0", 4, "ens2f0np0", "0000:41:00.0", 0, {"0000:40:01.1"});
  bnxt.driver = "bnxt_en";
  bnxt.rdma_driver = "bnxt_re";
  bnxt.parent.pci->vendor_id = 0x14e4;
  return {Ib("mlx5_2", 2, "0000:3b:00.0", 0), pf, vf, Iwarp("irdma0", 3, "ens785f0"), bnxt};
}

TEST(PoolsTest, FirstMatchWinsAndOverlapIsWarned) {
  auto cfg = Config(R"({"pools": [
      {"name": "ib", "selectors": {"transports": ["ib"]}},
      {"name": "mellanox", "selectors": {"vendors": ["15b3"]}},
      {"name": "rest", "selectors": {}}]})");
  PoolMatch m = MatchPools(cfg, Mixed());
  EXPECT_EQ(m.devices["ib"], std::vector<std::string>{"mlx5_2"});
  EXPECT_EQ(m.devices["mellanox"], (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(m.devices["rest"], (std::vector<std::string>{"irdma0", "bnxt_re0"}));
  ASSERT_FALSE(m.warnings.empty());
  EXPECT_EQ(m.warnings[0], "mlx5_2 matches pools ib and mellanox; it goes to ib (first match wins)");
}

TEST(PoolsTest, EmptyPoolStillHasAnEntry) {
  auto cfg = Config(R"({"pools": [{"name": "none", "selectors": {"drivers": ["cxgb4"]}}]})");
  PoolMatch m = MatchPools(cfg, Mixed());
  ASSERT_EQ(m.devices.count("none"), 1u);
  EXPECT_TRUE(m.devices["none"].empty());
}

struct SelectorCase {
  const char* name;
  const char* selectors;
  std::vector<std::string> expected;
};
void PrintTo(const SelectorCase& c, std::ostream* os) { *os << c.name; }

class SelectorTest : public ::testing::TestWithParam<SelectorCase> {};

TEST_P(SelectorTest, SelectsExactlyTheMatchingDevices) {
  auto cfg = Config(std::string(R"({"pools": [{"name": "p", "selectors": )") +
                    GetParam().selectors + "}]}");
  EXPECT_EQ(MatchPools(cfg, Mixed()).devices["p"], GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SelectorTest,
    ::testing::Values(
        SelectorCase{"Vendor", R"({"vendors": ["8086"]})", {"irdma0"}},
        SelectorCase{"DeviceId", R"({"deviceIDs": ["101e"]})", {"mlx5_1"}},
        SelectorCase{"DriverMatchesThePciFunctionsDriver", R"({"drivers": ["ice"]})", {"irdma0"}},
        SelectorCase{"DriverMatchesTheRdmaDriver", R"({"drivers": ["irdma"]})", {"irdma0"}},
        SelectorCase{"DriverBnxtEn", R"({"drivers": ["bnxt_en"]})", {"bnxt_re0"}},
        SelectorCase{"DriverBnxtRe", R"({"drivers": ["bnxt_re"]})", {"bnxt_re0"}},
        SelectorCase{"DriverMlx5IbAndCore", R"({"drivers": ["mlx5_ib"]})", {"mlx5_2", "mlx5_0", "mlx5_1"}},
        SelectorCase{"PciAddress", R"({"pciAddresses": ["0000:5e:00.2"]})", {"mlx5_1"}},
        SelectorCase{"RdmaDevice", R"({"rdmaDevices": ["mlx5_0", "irdma0"]})", {"mlx5_0", "irdma0"}},
        SelectorCase{"Netdev", R"({"netdevs": ["ens1f0v0"]})", {"mlx5_1"}},
        SelectorCase{"LinkType", R"({"linkTypes": ["infiniband"]})", {"mlx5_2"}},
        SelectorCase{"Transport", R"({"transports": ["roce", "iwarp"]})", {"mlx5_0", "mlx5_1", "irdma0", "bnxt_re0"}},
        SelectorCase{"Numa", R"({"numaNodes": [0]})", {"mlx5_2", "bnxt_re0"}},
        SelectorCase{"IsVF", R"({"isVF": true})", {"mlx5_1"}},
        SelectorCase{"NotVF", R"({"isVF": false, "vendors": ["15b3"]})", {"mlx5_2", "mlx5_0"}},
        SelectorCase{"PfNameSelectsPfAndItsVfs", R"({"pfNames": ["ens1f0np0"]})", {"mlx5_0", "mlx5_1"}},
        SelectorCase{"SelectorsAreAnded", R"({"pfNames": ["ens1f0np0"], "isVF": true})", {"mlx5_1"}}),
    [](const ::testing::TestParamInfo<SelectorCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace rdmak8s::dp
