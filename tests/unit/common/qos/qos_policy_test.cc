#include "rdmak8s/qos/qos_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace rdmak8s {
namespace {

using nlohmann::json;

TEST(QosPolicyTest, ParsesEveryFieldDroppingDuplicatePriorities) {
  auto p = ParseQosPolicy(json::parse(R"({"trust":"dscp","pfc":[3,3,4],"ecn":[3],
      "dscpToPriority":{"26":3,"48":6},"roceTos":106,"trafficClass":104,"strict":true})"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p->trust, "dscp");
  EXPECT_EQ(p->pfc, (std::vector<uint8_t>{3, 4}));
  EXPECT_EQ(p->ecn, (std::vector<uint8_t>{3}));
  EXPECT_EQ(p->dscp_to_priority, (std::map<uint8_t, uint8_t>{{26, 3}, {48, 6}}));
  EXPECT_EQ(*p->roce_tos, 106);
  EXPECT_EQ(*p->traffic_class, 104);
  EXPECT_TRUE(p->strict);
  EXPECT_FALSE(p->empty());
}

TEST(QosPolicyTest, EmptyBlockIsAnEmptyPolicy) {
  auto p = ParseQosPolicy(json::object());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->empty());
  EXPECT_FALSE(p->strict);
}

TEST(QosPolicyTest, RejectsTheFirstWrongFieldByName) {
  const std::pair<const char*, const char*> cases[] = {
      {R"([])", "$.qos: not an object (array)"},
      {R"({"trust":"vlan"})", "$.qos.trust: must be \"dscp\" or \"pcp\", not \"vlan\""},
      {R"({"trust":1})", "$.qos.trust: not a string (number)"},
      {R"({"pfc":[8]})", "$.qos.pfc[0]: 8 is not a priority 0..7"},
      {R"({"ecn":3})", "$.qos.ecn: not a list (number)"},
      {R"({"dscpToPriority":{"64":1}})", "$.qos.dscpToPriority.64: key \"64\" is not a DSCP 0..63"},
      {R"({"dscpToPriority":{"10":9}})", "$.qos.dscpToPriority.10: 9 is not a priority 0..7"},
      {R"({"dscpToPriority":[]})", "$.qos.dscpToPriority: not an object (array)"},
      {R"({"roceTos":256})", "$.qos.roceTos: must be an integer in 0..255, not 256"},
      {R"({"strict":"yes"})", "$.qos.strict: not a boolean (string)"},
      {R"({"pfc":[9],"trust":"vlan"})", "$.qos.trust: must be \"dscp\" or \"pcp\", not \"vlan\""},
  };
  for (const auto& [text, want] : cases) {
    auto p = ParseQosPolicy(json::parse(text));
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(p.status().message(), want) << text;
  }
}

// A DSCP key is the whole text, base 10: strtol's leading spaces and '+' are not a DSCP.
TEST(QosPolicyTest, RejectsDscpKeysThatAreNotPlainDecimal) {
  for (const char* key : {" 7", "+7", "7 ", "7abc", "0x7", "-0", ""}) {
    json q = {{"dscpToPriority", {{key, 1}}}};
    auto p = ParseQosPolicy(q);
    ASSERT_FALSE(p.ok()) << '"' << key << '"';
    EXPECT_EQ(p.status().message(),
              std::string("$.qos.dscpToPriority.") + key + ": key \"" + key + "\" is not a DSCP 0..63");
  }
}

}  // namespace
}  // namespace rdmak8s
