// The strict JSON reader (rdmak8s/base/json_reader.h): wrong types are errors naming the $.path.
#include "rdmak8s/base/json_reader.h"

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
  EXPECT_EQ(Parse("{", "GET /x").status().message().rfind("GET /x: not JSON: [json.exception.parse_error.101] parse error at line 1, column 2", 0), 0u)
      << Parse("{", "GET /x").status().message();
}

// `depth` lists, one inside the other: "[[[...]]]".
std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Issue 32 item 4: 300,000 levels ended the driver with SIGSEGV (nlohmann's copy and dump
// recurse once per level); the reader refuses past kMaxDepth, for objects as for lists.
TEST(JsonReaderTest, NestingDeeperThanTheBoundIsRefusedNamingIt) {
  ASSERT_TRUE(Parse(Nested(kMaxDepth), "doc").ok());
  for (const std::string& text : {Nested(kMaxDepth + 1), Nested(300000)}) {
    auto r = Parse(text, "GET /claim");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "GET /claim: nested deeper than 128 levels (json_reader::kMaxDepth)");
  }
  std::string objects;
  for (size_t i = 0; i < 300000; ++i) objects += "{\"a\":";
  EXPECT_NE(Parse(objects, "doc").status().message().find("nested deeper than 128"), std::string::npos);
  // A dropped member is never built, yet its depth counts: the bound holds for every byte.
  KeepOnly keep({"b"});
  EXPECT_NE(Parse("{\"a\":" + Nested(300000) + ",\"b\":1}", "doc", &keep).status().message().find("nested deeper"),
            std::string::npos);
}

TEST(JsonReaderTest, KeepOnlyBuildsTheNamedMembersAndThroughListsTheirItemsMembers) {
  KeepOnly keep({"kind", "metadata.name", "status.items.name", "status.config"});
  auto r = Parse(R"({"kind":"K","apiVersion":"v","metadata":{"name":"n","labels":{"a":"b"},"managedFields":[{}]},
                    "status":{"items":[{"name":"x","junk":[1,2]},{"junk":{}},3],"config":{"deep":{"a":[1]}},"other":1}})",
                 "doc", &keep);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, json::parse(R"({"kind":"K","metadata":{"name":"n"},
                               "status":{"items":[{"name":"x"},{},3],"config":{"deep":{"a":[1]}}}})"));
  // A kept member of the wrong type stays, for the reader to name; a dropped one is not checked.
  auto wrong = Parse(R"({"metadata":"x","status":{"other":{"a":[}}})", "doc", &keep);
  EXPECT_FALSE(wrong.ok());  // syntax is always checked
  auto typed = Parse(R"({"metadata":"x","spec":{"a":null}})", "doc", &keep);
  ASSERT_TRUE(typed.ok());
  EXPECT_EQ(*typed, json::parse(R"({"metadata":"x"})"));
  // Without a filter everything is kept, scalars at the root too.
  EXPECT_EQ(*Parse("7", "doc"), json(7));
  EXPECT_EQ(*Parse(R"({"a":{"b":[true,null,1.5,-2,"s"]}})", "doc"),
            json::parse(R"({"a":{"b":[true,null,1.5,-2,"s"]}})"));
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
