#include "device-plugin/pools/pool_cdi_spec.h"
#include "node/cdi_spec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/planted_files.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dp {
namespace {

using namespace testdev;
using nlohmann::json;

TEST(CdiSpecTest, OneCdiDevicePerRdmaDeviceAndRdmaCmSpecWide) {
  PoolState s;
  s.resource = "rdma/p";
  s.cdi_kind = "rdma/p";
  s.dev_root = "/host/dev";
  s.pool.mode = PoolMode::kShared;
  s.pool.capacity = 3;
  s.devices["mlx5_0"] = {Ib("mlx5_0", 0), {true, ""}};
  s.devices["irdma0"] = {Iwarp("irdma0", 1, "ens785f0"), {true, ""}};
  FillIds(s);
  json spec = json::parse(BuildCdiSpec(s));
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "rdma/p");
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], "irdma0");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"],
            json::parse(R"([{"path": "/dev/infiniband/uverbs1",
                             "hostPath": "/host/dev/infiniband/uverbs1", "permissions": "rw"}])"));
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"].size(), 2u);  // uverbs0, umad0
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"],
            json::parse(R"([{"path": "/dev/infiniband/rdma_cm",
                             "hostPath": "/host/dev/infiniband/rdma_cm", "permissions": "rw"}])"));
}

TEST(CdiSpecTest, PathReplacesSlash) {
  EXPECT_EQ(CdiSpecPath("/var/run/cdi", "rdma.example.com/hca"),
            "/var/run/cdi/rdmak8s-rdma.example.com-hca.json");
}

TEST(CdiSpecTest, AtomicWriteReplacesAndSkipsUnchanged) {
  const rdmak8s::testing::TempDir tmp;  // removed with what the test wrote, even on a failure
  const std::string& dir = tmp.path();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/s.json";
  ASSERT_TRUE(node::WriteFileIfChanged(path, "one").ok());
  struct stat st1 {};
  ASSERT_EQ(stat(path.c_str(), &st1), 0);
  ASSERT_TRUE(node::WriteFileIfChanged(path, "one").ok());
  struct stat st2 {};
  ASSERT_EQ(stat(path.c_str(), &st2), 0);
  EXPECT_EQ(st1.st_ino, st2.st_ino) << "unchanged content must not be rewritten";
  ASSERT_TRUE(node::WriteFileIfChanged(path, "two").ok());
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
  Status bad = node::WriteFileIfChanged("/nonexistent-dir/x.json", "x");
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
  EXPECT_TRUE(rdmak8s::testing::ReturnsWithoutBlockingOn(fifo, [&] { s = node::WriteFileIfChanged(fifo, "one"); }));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(s.message(), "CDI spec " + fifo + " (not replaced): not a regular file");

  { std::ofstream(dir + "/elsewhere.json") << "one"; }
  rdmak8s::testing::PlantSymlink(dir + "/elsewhere.json", dir + "/link.json");
  s = node::WriteFileIfChanged(dir + "/link.json", "one");
  EXPECT_EQ(s.message(), "CDI spec " + dir + "/link.json (not replaced): is a symlink");
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.json"));

  rdmak8s::testing::PlantFile(dir + "/big.json", node::kMaxCdiSpecBytes + 1);
  s = node::WriteFileIfChanged(dir + "/big.json", "one");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("big.json (not replaced): larger than"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rdmak8s::dp
