// Tests of the GID index CDI spec the DRA driver writes and the CNI fills in
// (rdmak8s/records/claim_gid_spec.h).
#include "rdmak8s/records/claim_gid_spec.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ClaimGidSpec, TheSpecHoldsOneDeviceWithOnlyEnvPendingUntilTheIndexIsKnown) {
  const json pending = json::parse(BuildClaimGidSpec(kDriver, "uid-1", "mlx5-0", std::nullopt));
  EXPECT_EQ(pending["kind"], "rdma.rdmak8s.io/claim-gid");
  ASSERT_EQ(pending["devices"].size(), 1u);
  EXPECT_EQ(pending["devices"][0]["name"], "uid-1-mlx5-0");
  // A CDI device without edits is refused by the runtime: the placeholder is an env edit.
  EXPECT_EQ(pending["devices"][0]["containerEdits"], json({{"env", {"RDMAK8S_GID_INDEX=pending"}}}));
  const json known = json::parse(BuildClaimGidSpec(kDriver, "uid-1", "mlx5-0", 3u));
  EXPECT_EQ(known["devices"][0]["containerEdits"]["env"],
            json({"NCCL_IB_GID_INDEX=3", "RDMAK8S_GID_INDEX=3", "UCX_IB_GID_INDEX=3"}));
  EXPECT_EQ(ClaimGidCdiDeviceId(kDriver, "uid-1", "mlx5-0"), "rdma.rdmak8s.io/claim-gid=uid-1-mlx5-0");
}

TEST(ClaimGidSpec, FileNamesAreBuiltOnlyFromValidatedNames) {
  EXPECT_EQ(*ClaimGidSpecPath("/cdi", kDriver, "uid-1", "mlx5-0"),
            "/cdi/rdma.rdmak8s.io-claim-gid_uid-1_mlx5-0.json");
  for (const char* device : {"../x", "a/b", "Dev", "a.b", ""}) {
    StatusOr<std::string> p = ClaimGidSpecPath("/cdi", kDriver, "uid-1", device);
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << device;
  }
  EXPECT_EQ(ClaimGidSpecPath("/cdi", kDriver, "../uid", "d").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ClaimGidSpecPath("/cdi", "a/b", "uid", "d").status().code(), StatusCode::kInvalidArgument);
}

TEST(ClaimGidSpec, WriteIfAbsentKeepsTheIndexTheCniWrote) {
  testing::TempDir tmp;
  const std::string cdi = tmp.path();
  ASSERT_TRUE(WriteClaimGidSpecIfAbsent(cdi, kDriver, "uid-1", "mlx5-0").ok());
  const std::string path = *ClaimGidSpecPath(cdi, kDriver, "uid-1", "mlx5-0");
  EXPECT_EQ(Slurp(path), BuildClaimGidSpec(kDriver, "uid-1", "mlx5-0", std::nullopt));
  StatusOr<bool> set = SetClaimGidIndex(cdi, kDriver, "uid-1", "mlx5-0", 5);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(*set);
  ASSERT_TRUE(WriteClaimGidSpecIfAbsent(cdi, kDriver, "uid-1", "mlx5-0").ok());
  EXPECT_EQ(Slurp(path), BuildClaimGidSpec(kDriver, "uid-1", "mlx5-0", 5u));
  size_t files = 0;  // no staging file left behind
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cdi)) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(ClaimGidSpec, TheCniNeverCreatesASpecTheDriverDidNotWrite) {
  testing::TempDir tmp;
  StatusOr<bool> set = SetClaimGidIndex(tmp.path(), kDriver, "uid-1", "mlx5-0", 5);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_FALSE(*set);
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

TEST(ClaimGidSpec, RemoveTakesEveryDeviceOfTheClaimAndNothingOfAnother) {
  testing::TempDir tmp;
  const std::string cdi = tmp.path();
  for (const char* d : {"mlx5-0", "mlx5-1"}) ASSERT_TRUE(WriteClaimGidSpecIfAbsent(cdi, kDriver, "uid-1", d).ok());
  ASSERT_TRUE(WriteClaimGidSpecIfAbsent(cdi, kDriver, "uid-1-2", "mlx5-0").ok());
  ASSERT_TRUE(WriteClaimGidSpecIfAbsent(cdi, "other.example.com", "uid-1", "mlx5-0").ok());
  ASSERT_TRUE(RemoveClaimGidSpecs(cdi, kDriver, "uid-1").ok());
  EXPECT_FALSE(fs::exists(*ClaimGidSpecPath(cdi, kDriver, "uid-1", "mlx5-0")));
  EXPECT_FALSE(fs::exists(*ClaimGidSpecPath(cdi, kDriver, "uid-1", "mlx5-1")));
  EXPECT_TRUE(fs::exists(*ClaimGidSpecPath(cdi, kDriver, "uid-1-2", "mlx5-0")));
  EXPECT_TRUE(fs::exists(*ClaimGidSpecPath(cdi, "other.example.com", "uid-1", "mlx5-0")));
  EXPECT_TRUE(RemoveClaimGidSpecs(cdi, kDriver, "uid-1").ok());
  EXPECT_TRUE(RemoveClaimGidSpecs(cdi + "/missing", kDriver, "uid-1").ok());
}

}  // namespace
}  // namespace rdmak8s
