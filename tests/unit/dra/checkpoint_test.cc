#include "dra/checkpoint.h"

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s::dra {
namespace {

PreparedClaim Sample(std::string uid, ClaimPhase phase) {
  PreparedClaim c;
  c.uid = uid;
  c.namespace_name = "ns";
  c.name = "claim-" + uid;
  c.phase = phase;
  c.devices = {{"nic", "node-a", "mlx5-0", "mlx5_0", "0000:3b:00.0", {"rdma.rdmak8s.io/claim=" + uid + "-mlx5-0"}}};
  c.pod_uids = {"pod-1", "pod-2"};
  c.cdi_spec_path = "/var/run/cdi/rdmak8s-dra-" + uid + ".json";
  return c;
}

TEST(Checkpoint, RoundTripsEveryField) {
  ClaimMap claims{{"a", Sample("a", ClaimPhase::kPrepared)}, {"b", Sample("b", ClaimPhase::kPreparing)}};
  auto parsed = ParseCheckpoint(SerializeCheckpoint(claims));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, claims);
}

TEST(Checkpoint, MissingFileIsEmptyAndSaveLoadSurvivesARestart) {
  testing::TempDir tmp;
  Checkpoint first(tmp.path() + "/state", "rdma.rdmak8s.io");
  auto empty = first.Load();
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());
  ClaimMap claims{{"a", Sample("a", ClaimPhase::kPrepared)}};
  ASSERT_TRUE(first.Save(claims).ok());

  Checkpoint restarted(tmp.path() + "/state", "rdma.rdmak8s.io");
  auto loaded = restarted.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(*loaded, claims);
  struct stat st;
  ASSERT_EQ(stat(restarted.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((tmp.path() + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(Checkpoint, CorruptFileIsAnErrorNotAnEmptyCheckpoint) {
  testing::TempDir tmp;
  Checkpoint cp(tmp.path(), "rdma.rdmak8s.io");
  ASSERT_TRUE(cp.Save({}).ok());
  std::ofstream(cp.path()) << "{\"version\": 1, \"claims\": [{\"uid\": 7}]}";
  auto loaded = cp.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("$.claims[0].uid"), std::string::npos)
      << loaded.status().message();
}

// Issue 32 item 4: the record's nesting is bounded by the one reader, as every input's is.
TEST(Checkpoint, NestingPastTheReadersBoundIsRefusedNamingIt) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  auto parsed = ParseCheckpoint(R"({"version": 1, "claims": )" + deep + "}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("nested deeper than 128 levels"), std::string::npos)
      << parsed.status().message();
}

// The record is read by the one strict reader: each wrong field is named by its $.path and type.
TEST(Checkpoint, WrongFieldsAreNamedByPathAndType) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"version":1,"claims":{}})", "$.claims: not a list (object)"},
      {R"({"version":1,"claims":[7]})", "$.claims[0]: not an object (number)"},
      {R"({"version":1,"claims":[{"uid":7}]})", "$.claims[0].uid: not a string (number)"},
      {R"({"version":1,"claims":[{"namespace":"n"}]})", "$.claims[0].uid: missing"},
      {R"({"version":1,"claims":[{"uid":"u","namespace":"n","name":"c","phase":"prepared",
          "cdiSpecPath":"/p","podUids":["a",3]}]})", "$.claims[0].podUids[1]: not a string"},
      {R"({"version":1,"claims":[{"uid":"u","namespace":"n","name":"c","phase":"prepared",
          "cdiSpecPath":"/p","devices":[{"request":1}]}]})",
       "$.claims[0].devices[0].request: not a string (number)"},
  };
  for (const auto& [text, want] : cases) {
    auto parsed = ParseCheckpoint(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().message(), want) << text;
  }
}

TEST(Checkpoint, RefusesAnotherVersionAndDuplicateUids) {
  EXPECT_FALSE(ParseCheckpoint("{\"version\": 2}").ok());
  std::string one = SerializeCheckpoint({{"a", Sample("a", ClaimPhase::kPrepared)}});
  auto j = one.substr(0, one.rfind(']'));
  // Two copies of the same claim.
  std::string claim = one.substr(one.find('[') + 1, one.rfind(']') - one.find('[') - 1);
  std::string twice = "{\"version\": 1, \"claims\": [" + claim + "," + claim + "]}";
  auto parsed = ParseCheckpoint(twice);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("appears twice"), std::string::npos);
}

TEST(Checkpoint, TwoDriverNamesKeepTwoCheckpointsInOneStateDir) {
  testing::TempDir tmp;
  Checkpoint a(tmp.path(), "a.example.com");
  Checkpoint b(tmp.path(), "b.example.com");
  EXPECT_NE(a.path(), b.path());
  ASSERT_TRUE(a.Save({{"x", Sample("x", ClaimPhase::kPrepared)}}).ok());
  ASSERT_TRUE(b.Save({}).ok());
  auto loaded = a.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->count("x"), 1u);
}

// Upgrade: the checkpoint.json every driver name wrote before is taken over, each driver name
// taking the claims of its own CDI kind.
TEST(Checkpoint, TheSharedCheckpointOfAnOlderDriverIsTakenOverByKind) {
  testing::TempDir tmp;
  PreparedClaim other = Sample("o", ClaimPhase::kPrepared);
  other.devices[0].cdi_device_ids = {"roce.example.com/claim=o-mlx5-0"};
  ClaimMap legacy{{"a", Sample("a", ClaimPhase::kPrepared)}, {"o", other}};
  ASSERT_TRUE(Checkpoint(tmp.path(), "").Save(legacy).ok());
  ASSERT_EQ(Checkpoint(tmp.path(), "").path(), tmp.path() + "/checkpoint.json");

  Checkpoint ours(tmp.path(), "rdma.rdmak8s.io");
  auto loaded = ours.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(*loaded, (ClaimMap{{"a", Sample("a", ClaimPhase::kPrepared)}}));
  auto saved = ParseCheckpoint([&] {
    std::ifstream in(ours.path());
    return std::string(std::istreambuf_iterator<char>(in), {});
  }());
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_EQ(*saved, *loaded);
  auto theirs = Checkpoint(tmp.path(), "roce.example.com").Load();
  ASSERT_TRUE(theirs.ok()) << theirs.status().message();
  EXPECT_EQ(*theirs, (ClaimMap{{"o", other}}));
}

}  // namespace
}  // namespace rdmak8s::dra
