// Tests of the Preparer's GID index specs (dra/preparer.h, gidIndexEnv): which claims get one,
// that a re-prepare keeps the CNI's index and that unprepare removes them.
#include "dra/preparer.h"

#include "node/allocate.h"
#include "rdmak8s/records/claim_gid_spec.h"
#include "unit/dra/preparer_fixture.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;

constexpr char kGidAsked[] = R"({"gidIndexEnv":true})";

ResourceClaim GidClaim(std::vector<std::string> pods = {"pod-1"}, std::string device = "mlx5-2") {
  ResourceClaim c = Claim("uid-1", {Ours(std::move(device))}, std::move(pods));
  c.config = {{"FromClaim", {}, kDriver, kGidAsked}};
  return c;
}

TEST_F(PreparerTest, ARoceDeviceOfAOnePodClaimAskingForItGetsAGidIndexSpec) {
  reader_.Put(GidClaim());
  auto devices = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].cdi_device_ids,
            (std::vector<std::string>{"rdma.rdmak8s.io/claim=uid-1-mlx5-2",
                                      "rdma.rdmak8s.io/claim-gid=uid-1-mlx5-2"}));
  EXPECT_EQ(Read(*ClaimGidSpecPath(options_.cdi_dir, kDriver, "uid-1", "mlx5-2")),
            BuildClaimGidSpec(kDriver, "uid-1", "mlx5-2", std::nullopt));
}

TEST_F(PreparerTest, NoGidIndexSpecForASharedClaimAnIbDeviceOrAClaimThatDidNotAsk) {
  ResourceClaim shared = GidClaim({"pod-1", "pod-2"});  // one spec cannot carry each pod's index
  ResourceClaim ib = GidClaim({"pod-1"}, "mlx5-0");
  ib.uid = "uid-2";
  ResourceClaim plain = Claim("uid-3", {Ours("mlx5-2")});
  for (const ResourceClaim& c : {shared, ib, plain}) {
    reader_.Put(c);
    auto devices = preparer_->Prepare(Ref(c.uid));
    ASSERT_TRUE(devices.ok()) << c.uid << ": " << devices.status().message();
    EXPECT_EQ((*devices)[0].cdi_device_ids.size(), 1u) << c.uid;
  }
  for (const auto& e : fs::directory_iterator(options_.cdi_dir)) {
    EXPECT_EQ(e.path().filename().string().find("claim-gid"), std::string::npos) << e.path();
  }
}

TEST_F(PreparerTest, ARePrepareAfterADriverRestartKeepsTheIndexTheCniWrote) {
  // The driver died after writing the spec, before checkpointing kPrepared; the CNI then ran.
  reader_.Put(GidClaim());
  ASSERT_TRUE(preparer_->Prepare(Ref("uid-1")).ok());
  ClaimMap half = preparer_->Claims();
  half["uid-1"].phase = ClaimPhase::kPreparing;
  ASSERT_TRUE(Checkpoint(options_.state_dir, kDriver).Save(half).ok());
  ASSERT_TRUE(*SetClaimGidIndex(options_.cdi_dir, kDriver, "uid-1", "mlx5-2", 3));
  Restart();
  auto devices = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_EQ(Read(*ClaimGidSpecPath(options_.cdi_dir, kDriver, "uid-1", "mlx5-2")),
            BuildClaimGidSpec(kDriver, "uid-1", "mlx5-2", 3u));
}

TEST_F(PreparerTest, UnprepareRemovesTheGidIndexSpecEvenOfAClaimTheCheckpointLost) {
  reader_.Put(GidClaim());
  ASSERT_TRUE(preparer_->Prepare(Ref("uid-1")).ok());
  const std::string path = *ClaimGidSpecPath(options_.cdi_dir, kDriver, "uid-1", "mlx5-2");
  ASSERT_TRUE(fs::exists(path));
  ASSERT_TRUE(preparer_->Unprepare(Ref("uid-1")).ok());
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE(WriteClaimGidSpecIfAbsent(options_.cdi_dir, kDriver, "uid-1", "mlx5-2").ok());
  ASSERT_TRUE(preparer_->Unprepare(Ref("uid-1")).ok());  // unknown to the checkpoint now
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(PreparerTest, APoolsAllocateOptionsCannotAskForTheGidIndex) {
  EXPECT_TRUE(node::ParseAllocateOptions(kGidAsked).ok());
  StatusOr<node::AllocateOptions> pool = node::ParseAllocate(nlohmann::json::parse(kGidAsked), "$.pools[0].allocate");
  EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pool.status().message().find("gidIndexEnv"), std::string::npos) << pool.status().message();
}

}  // namespace
}  // namespace rdmak8s::dra
