// node/cdi_spec: the writer both agents' CDI specs go through (atomic, skipped when unchanged,
// never following or waiting on what is planted at the path), and the document builder.
#include "node/cdi_spec.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/planted_files.h"
#include "support/temp_dir.h"

namespace rdmak8s::node {
namespace {

using nlohmann::json;

// Each device's own nodes and env in its containerEdits; rdma_cm, which every device shares, once
// spec-wide (a container given two devices must not get the node twice).
TEST(CdiSpecDocumentTest, EachDeviceHasItsOwnNodesAndEnvAndRdmaCmIsSpecWideOnce) {
  CdiDevice a{"mlx5_0",
              {{"uverbs0", "/host/dev/infiniband/uverbs0", "/dev/infiniband/uverbs0"},
               {"rdma_cm", "/host/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm"}},
              {{"NCCL_IB_HCA", "=mlx5_0"}}};
  CdiDevice b{"mlx5_1",
              {{"uverbs1", "/host/dev/infiniband/uverbs1", "/dev/infiniband/uverbs1"},
               {"rdma_cm", "/host/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm"}},
              {}};
  json doc = json::parse(BuildCdiSpecDocument("rdma.example.com/hca", {a, b}));
  EXPECT_EQ(doc["kind"], "rdma.example.com/hca");
  ASSERT_EQ(doc["devices"].size(), 2u);
  EXPECT_EQ(doc["devices"][0]["name"], "mlx5_0");
  const json& edits0 = doc["devices"][0]["containerEdits"];
  ASSERT_EQ(edits0["deviceNodes"].size(), 1u) << edits0.dump();
  EXPECT_EQ(edits0["deviceNodes"][0]["path"], "/dev/infiniband/uverbs0");
  EXPECT_EQ(edits0["deviceNodes"][0]["hostPath"], "/host/dev/infiniband/uverbs0");
  EXPECT_EQ(edits0["env"], json::array({"NCCL_IB_HCA==mlx5_0"}));
  EXPECT_FALSE(doc["devices"][1]["containerEdits"].contains("env")) << "omitted when empty";
  const json& wide = doc["containerEdits"]["deviceNodes"];
  ASSERT_EQ(wide.size(), 1u) << wide.dump();
  EXPECT_EQ(wide[0]["path"], "/dev/infiniband/rdma_cm");
}

TEST(CdiSpecTest, AtomicWriteReplacesAndSkipsUnchanged) {
  const rdmak8s::testing::TempDir tmp;  // removed with what the test wrote, even on a failure
  const std::string& dir = tmp.path();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/s.json";
  ASSERT_TRUE(WriteFileIfChanged(path, "one").ok());
  struct stat st1 {};
  ASSERT_EQ(stat(path.c_str(), &st1), 0);
  ASSERT_TRUE(WriteFileIfChanged(path, "one").ok());
  struct stat st2 {};
  ASSERT_EQ(stat(path.c_str(), &st2), 0);
  EXPECT_EQ(st1.st_ino, st2.st_ino) << "unchanged content must not be rewritten";
  ASSERT_TRUE(WriteFileIfChanged(path, "two").ok());
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "two");
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename(), "s.json") << "no temporary left behind";
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  Status bad = WriteFileIfChanged("/nonexistent-dir/x.json", "x");
  EXPECT_EQ(bad.code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.message().rfind("create /nonexistent-dir/x.json.tmp.", 0), 0u) << bad.message();
  EXPECT_NE(bad.message().find(": No such file or directory"), std::string::npos) << bad.message();
}

// The read-back that decides "unchanged" goes through the one safe reader: something planted at
// the spec's path is an error naming it, never followed, never waited on, and left as it is.
TEST(CdiSpecTest, APlantedFifoLinkOrHugeFileAtTheSpecPathIsRefusedWithoutBlocking) {
  const rdmak8s::testing::TempDir tmp;
  const std::string dir = tmp.path();
  const std::string fifo = dir + "/fifo.json";
  rdmak8s::testing::PlantFifo(fifo);
  Status s = InternalError("not called");
  EXPECT_TRUE(rdmak8s::testing::ReturnsWithoutBlockingOn(fifo, [&] { s = WriteFileIfChanged(fifo, "one"); }));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(s.message(), "CDI spec " + fifo + " (not replaced): not a regular file");

  { std::ofstream(dir + "/elsewhere.json") << "one"; }
  rdmak8s::testing::PlantSymlink(dir + "/elsewhere.json", dir + "/link.json");
  s = WriteFileIfChanged(dir + "/link.json", "one");
  EXPECT_EQ(s.message(), "CDI spec " + dir + "/link.json (not replaced): is a symlink");
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.json"));

  rdmak8s::testing::PlantFile(dir + "/big.json", kMaxCdiSpecBytes + 1);
  s = WriteFileIfChanged(dir + "/big.json", "one");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("big.json (not replaced): larger than"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rdmak8s::node
