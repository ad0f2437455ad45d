// FieldReader: the first failure is the one reported, later reads still answer, and every
// message is json_reader.h's "<path>.<key>: <what>".
#include "rdmak8s/base/json_field_reader.h"

#include <gtest/gtest.h>

namespace rdmak8s::json_reader {
namespace {

using nlohmann::json;

TEST(FieldReaderTest, TheFirstFailureWinsAndLaterReadsStillAnswer) {
  const json j = {{"a", 1}, {"b", "x"}, {"c", true}, {"n", 300}};
  FieldReader r("$.qos");
  EXPECT_EQ(r.String(j, "a"), "");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.String(j, "b"), "x") << "a later read still reads";
  EXPECT_EQ(r.Int(j, "n", 0, 255), std::nullopt);
  EXPECT_TRUE(r.Bool(j, "c", false));
  r.Fail("later");
  EXPECT_EQ(*r.error(), "$.qos.a: not a string (number)");
}

TEST(FieldReaderTest, AnIntOutOfRangeNamesItsRangeAndAbsentFieldsAreDefaults) {
  const json j = {{"port", 300}, {"off", nullptr}};
  FieldReader r;
  EXPECT_EQ(r.Int(j, "off", 1, 255), std::nullopt);
  EXPECT_EQ(r.Int(j, "missing", 1, 255), std::nullopt);
  EXPECT_FALSE(r.Bool(j, "missing", false));
  EXPECT_EQ(r.String(j, "missing"), "");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.Int(j, "port", 1, 255), std::nullopt);
  EXPECT_EQ(*r.error(), "$.port: must be an integer in 1..255, not 300");
}

TEST(FieldReaderTest, AReadAtAnotherPathNamesThatPath) {
  const json rc = {{"deviceID", 7}};
  FieldReader r;
  r.String(rc, "deviceID", "$.runtimeConfig");
  EXPECT_EQ(*r.error(), "$.runtimeConfig.deviceID: not a string (number)");
}

}  // namespace
}  // namespace rdmak8s::json_reader
