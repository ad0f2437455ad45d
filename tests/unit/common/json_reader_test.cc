// The strict JSON reader (rdmak8s/json_reader.h): wrong types are errors naming the $.path.
#include "rdmak8s/json_reader.h"

#include <gtest/gtest.h>

namespace rdmak8s::json_reader {
namespace {

using nlohmann::json;

TEST(JsonReaderTest, WrongTypesAreErrorsNamingThePath) {
  const json doc = json::parse(R"({"metadata":{"continue":7,"name":"a"},"items":{},"n":1.5,
                                   "big":9223372036854775808,"ok":"yes"})");
  EXPECT_EQ(StringAt(doc["metadata"], "$.metadata", "continue").status().message(),
            "$.metadata.continue: not a string (number)");
  EXPECT_EQ(*StringAt(doc["metadata"], "$.metadata", "name"), "a");
  EXPECT_EQ(ArrayAt(doc, "$", "items").status().message(), "$.items: not a list (object)");
  EXPECT_EQ(IntAt(doc, "$", "n", 0).status().message(), "$.n: not an int64 (number)");
  EXPECT_EQ(IntAt(doc, "$", "big", 0).status().message(), "$.big: not an int64 (number)");
  EXPECT_EQ(BoolAt(doc, "$", "ok", false).status().message(), "$.ok: not a boolean (string)");
  EXPECT_EQ(ObjectAt(json::array(), "$", "metadata").status().message(),
            "$: not an object (array)");
}

TEST(JsonReaderTest, AbsentAndNullAreNotThereUnlessRequired) {
  const json doc = json::parse(R"({"a":null})");
  EXPECT_EQ(*ObjectAt(doc, "$", "a"), nullptr);
  EXPECT_EQ(*ArrayAt(doc, "$", "b"), nullptr);
  EXPECT_EQ(*StringAt(doc, "$", "a"), "");
  EXPECT_EQ(StringAt(doc, "$", "a", /*required=*/true).status().message(), "$.a: missing");
  EXPECT_EQ(*IntAt(doc, "$", "a", 7), 7);
  EXPECT_TRUE(*BoolAt(doc, "$", "b", true));
  EXPECT_EQ(Index(Field("$", "items"), 2), "$.items[2]");
  EXPECT_EQ(Parse("{", "GET /x").status().message(), "GET /x: answer is not JSON");
}

TEST(JsonReaderTest, UnknownKeysAreRefusedNamingTheSortedAllowedOnes) {
  EXPECT_TRUE(CheckKeys(json::parse(R"({"pools":[]})"), "$", {"resourcePrefix", "pools"}).ok());
  EXPECT_EQ(CheckKeys(json::parse(R"({"poolz":1})"), "$.x", {"resourcePrefix", "pools"}).message(),
            "$.x.poolz: unknown field (allowed: pools, resourcePrefix)");
  EXPECT_EQ(CheckKeys(json::array(), "$", {"pools"}).message(), "$: not an object (array)");
}

TEST(JsonReaderTest, StringListNamesTheElementOfTheWrongType) {
  EXPECT_EQ(*StringList(json::parse(R"(["a","b"])"), "$.v"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(StringList(json("ib0"), "$.v").status().message(), "$.v: not a list (string)");
  EXPECT_EQ(StringList(json::parse(R"(["a",1])"), "$.v").status().message(),
            "$.v[1]: not a string (number)");
  EXPECT_EQ(Missing("$.v").message(), "$.v: missing");
  EXPECT_EQ(Invalid("$.v", "must not be empty").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdmak8s::json_reader
