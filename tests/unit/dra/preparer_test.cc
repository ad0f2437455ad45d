#include "dra/preparer.h"

#include "unit/dra/preparer_fixture.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(PreparerTest, PrepareWritesCdiSpecAndPodRecordAndReturnsCdiIds) {
  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}, {"pod-1", "pod-2"}));
  auto devices = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].cdi_device_ids,
            (std::vector<std::string>{"rdma.rdmak8s.io/claim=uid-1-mlx5-0"}));
  EXPECT_EQ((*devices)[0].pool, kPool);
  EXPECT_EQ((*devices)[0].request, "nic");

  json spec = json::parse(Read(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
  EXPECT_EQ(spec["devices"][0]["name"], "uid-1-mlx5-0");

  for (const char* pod : {"pod-1", "pod-2"}) {
    auto records = ReadPodClaimRecords(options_.pod_devices_dir, pod);
    ASSERT_TRUE(records.ok()) << records.status().message();
    ASSERT_EQ(records->size(), 1u);
    EXPECT_EQ((*records)[0].claim_uid, "uid-1");
    ASSERT_EQ((*records)[0].devices.size(), 1u);
    EXPECT_EQ((*records)[0].devices[0].rdma_dev, "mlx5_0");
    EXPECT_EQ((*records)[0].devices[0].bus_id, "0000:3b:00.0");
  }
  EXPECT_EQ(preparer_->Claims().at("uid-1").phase, ClaimPhase::kPrepared);
}

TEST_F(PreparerTest, PrepareTwiceIsIdempotentAndAnsweredFromTheCheckpoint) {
  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}));
  auto first = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  reader_.SetUnavailable(true);
  auto second = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(reader_.reads(), 1);
}

TEST_F(PreparerTest, RestartedDriverKeepsPreparedClaimsAndCanUnprepareThem) {
  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}));
  auto before = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(before.ok());
  Restart();
  reader_.SetUnavailable(true);
  auto after = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(*before, *after);

  ASSERT_TRUE(preparer_->Unprepare(Ref("uid-1")).ok());
  EXPECT_FALSE(fs::exists(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
  EXPECT_EQ(ReadPodClaimRecords(options_.pod_devices_dir, "pod-1").status().code(), StatusCode::kNotFound);
  Restart();
  EXPECT_TRUE(preparer_->Claims().empty());
}

TEST_F(PreparerTest, PrepareCutShortBeforeItsLastStepIsRedoneOrUndoneAfterRestart) {
  // The checkpoint says kPreparing: the driver died between its write-ahead and the end.
  ClaimMap half{{"uid-1", {"uid-1", "team", "nic-claim", ClaimPhase::kPreparing, {}, {"pod-old"},
                           options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"}}};
  ASSERT_TRUE(Checkpoint(options_.state_dir, kDriver).Save(half).ok());
  ASSERT_TRUE(WritePodClaimRecord(options_.pod_devices_dir, "pod-old", "rdma.rdmak8s.io", {"team", "nic-claim", "uid-1", {}}).ok());
  std::ofstream(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json") << "{}";
  Restart();

  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}, {"pod-1"}));
  auto devices = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_EQ(preparer_->Claims().at("uid-1").phase, ClaimPhase::kPrepared);
  json spec = json::parse(Read(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
  EXPECT_EQ(spec["devices"][0]["name"], "uid-1-mlx5-0");
  // The pod no longer reserved lost its record.
  EXPECT_EQ(ReadPodClaimRecords(options_.pod_devices_dir, "pod-old").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(ReadPodClaimRecords(options_.pod_devices_dir, "pod-1").ok());
}

TEST_F(PreparerTest, UnprepareOfAHalfPreparedClaimRemovesWhatWasWritten) {
  ClaimMap half{{"uid-1", {"uid-1", "team", "nic-claim", ClaimPhase::kPreparing, {}, {"pod-1"},
                           options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"}}};
  ASSERT_TRUE(Checkpoint(options_.state_dir, kDriver).Save(half).ok());
  ASSERT_TRUE(WritePodClaimRecord(options_.pod_devices_dir, "pod-1", "rdma.rdmak8s.io", {"team", "nic-claim", "uid-1", {}}).ok());
  Restart();
  ASSERT_TRUE(preparer_->Unprepare(Ref("uid-1")).ok());
  EXPECT_EQ(ReadPodClaimRecords(options_.pod_devices_dir, "pod-1").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(preparer_->Claims().empty());
}

TEST_F(PreparerTest, WrongUidIsRefusedAndNothingIsWritten) {
  reader_.Put(Claim("uid-new", {Ours("mlx5-0")}));
  auto devices = preparer_->Prepare(Ref("uid-old"));
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(devices.status().message().find("uid-new"), std::string::npos) << devices.status().message();
  EXPECT_TRUE(preparer_->Claims().empty());
  EXPECT_FALSE(fs::exists(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-old.json"));
}

TEST_F(PreparerTest, MissingClaimAndUnreachableServerAreErrorsNamingTheClaim) {
  auto missing = preparer_->Prepare(Ref("uid-1"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("team/nic-claim"), std::string::npos);
  reader_.SetUnavailable(true);
  EXPECT_EQ(preparer_->Prepare(Ref("uid-1")).status().code(), StatusCode::kUnavailable);
}

TEST_F(PreparerTest, ResultsOfOtherDriversAreLeftToThem) {
  reader_.Put(Claim("uid-1", {{"gpu", "gpu.nvidia.com", kPool, "gpu-0"}, Ours("mlx5-2", "nic")}));
  auto devices = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].device, "mlx5-2");
  json spec = json::parse(Read(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
  EXPECT_EQ(spec["devices"].size(), 1u);
}

TEST_F(PreparerTest, ClaimWithNoDeviceOfOursPreparesToNothingAndWritesNoSpec) {
  reader_.Put(Claim("uid-1", {{"gpu", "gpu.nvidia.com", kPool, "gpu-0"}}));
  auto devices = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_TRUE(devices->empty());
  EXPECT_FALSE(fs::exists(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
}

TEST_F(PreparerTest, UnknownOrUnhealthyDeviceOrUnallocatedClaimFails) {
  reader_.Put(Claim("uid-1", {Ours("mlx5-9")}));
  EXPECT_EQ(preparer_->Prepare(Ref("uid-1")).status().code(), StatusCode::kNotFound);
  reader_.Put(Claim("uid-1", {{"nic", kDriver, "node-b", "mlx5-0"}}));
  EXPECT_EQ(preparer_->Prepare(Ref("uid-1")).status().code(), StatusCode::kNotFound);
  reader_.Put(Claim("uid-1", {Ours("mlx5-1")}));
  auto unhealthy = preparer_->Prepare(Ref("uid-1"));
  EXPECT_EQ(unhealthy.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(unhealthy.status().message().find("port 1 state DOWN"), std::string::npos);
  ResourceClaim pending = Claim("uid-1", {});
  pending.allocated = false;
  reader_.Put(pending);
  EXPECT_EQ(preparer_->Prepare(Ref("uid-1")).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(preparer_->Claims().empty());
}

TEST_F(PreparerTest, OpaqueConfigOfOurDriverSetsEnvAndTheClaimsEntryWins) {
  ResourceClaim c = Claim("uid-1", {Ours("mlx5-0", "nic")});
  c.config = {{"FromClass", {}, kDriver, R"({"ncclEnv": true})"},
              {"FromClaim", {"nic"}, kDriver, R"({"ucxEnv": true})"},
              {"FromClaim", {}, "gpu.nvidia.com", R"({"whatever": 1})"}};
  reader_.Put(c);
  ASSERT_TRUE(preparer_->Prepare(Ref("uid-1")).ok());
  json spec = json::parse(Read(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["env"], json::array({"UCX_NET_DEVICES=mlx5_0:1"}));
}

TEST_F(PreparerTest, BadOpaqueConfigFailsTheClaimNamingIt) {
  ResourceClaim c = Claim("uid-1", {Ours("mlx5-0")});
  c.config = {{"FromClaim", {}, kDriver, R"({"ncclEnv": "yes"})"}};
  reader_.Put(c);
  auto r = preparer_->Prepare(Ref("uid-1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("$.ncclEnv"), std::string::npos) << r.status().message();
}

TEST_F(PreparerTest, UnprepareOfUnknownClaimSucceedsAndRunsTwice) {
  EXPECT_TRUE(preparer_->Unprepare(Ref("never-seen")).ok());
  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}));
  ASSERT_TRUE(preparer_->Prepare(Ref("uid-1")).ok());
  EXPECT_TRUE(preparer_->Unprepare(Ref("uid-1")).ok());
  EXPECT_TRUE(preparer_->Unprepare(Ref("uid-1")).ok());
}

TEST_F(PreparerTest, SameUidUnderAnotherNameIsRefused) {
  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}));
  ASSERT_TRUE(preparer_->Prepare(Ref("uid-1")).ok());
  auto r = preparer_->Prepare({"team", "uid-1", "other-claim"});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PreparerTest, UidThatIsNotAPlainNameIsRefused) {
  EXPECT_EQ(preparer_->Prepare(Ref("../../etc")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(preparer_->Unprepare(Ref("../x")).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdmak8s::dra

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Shared mode (--shares 2 without consumable capacity): claims name "<device>-<k>".
TEST_F(PreparerTest, TwoClaimsOnTwoSharesOfOneDeviceBothPrepareThatDevice) {
  DeviceCatalog shared(kPool, nullptr, 2);
  shared.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {}, node::Presence::kPresent}}});
  auto p = Preparer::Create(options_, &reader_, &shared);
  ASSERT_TRUE(p.ok()) << p.status().message();
  reader_.Put(Claim("uid-1", {Ours("mlx5-0-0")}, {"pod-1"}));
  auto first = (*p)->Prepare(Ref("uid-1"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  ClaimRef second_ref{"team", "uid-2", "nic-claim-2"};
  ResourceClaim second = Claim("uid-2", {Ours("mlx5-0-1")}, {"pod-2"});
  second.name = "nic-claim-2";
  reader_.Put(second);
  auto other = (*p)->Prepare(second_ref);
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ((*first)[0].rdma_dev, "mlx5_0");
  EXPECT_EQ((*other)[0].rdma_dev, "mlx5_0");
  EXPECT_EQ((*other)[0].device, "mlx5-0-1");
  reader_.Put(Claim("uid-3", {Ours("mlx5-0-2")}));
  EXPECT_EQ((*p)->Prepare(Ref("uid-3")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace rdmak8s::dra

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Issue 24 item 1: a claim is any namespace user's; issm, roceUmad and env are the admin's.
TEST_F(PreparerTest, AClaimsOwnConfigCannotTurnOnIssmOrEnvAndNothingIsWritten) {
  ResourceClaim c = Claim("uid-1", {Ours("mlx5-0")});
  c.config = {{"FromClaim", {}, kDriver, R"({"issm":true,"env":{"LD_PRELOAD":"/evil.so"}})"}};
  reader_.Put(c);
  auto r = preparer_->Prepare(Ref("uid-1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("key \"env\""), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("FromClaim"), std::string::npos) << r.status().message();
  EXPECT_TRUE(preparer_->Claims().empty());
  EXPECT_FALSE(fs::exists(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
  EXPECT_FALSE(fs::exists(options_.pod_devices_dir + "/pod-1"));
  Restart();
  EXPECT_TRUE(preparer_->Claims().empty());

  for (const char* params : {R"({"issm":true})", R"({"roceUmad":true})", R"({"ncclEnv":true,"issm":false})"}) {
    c.config = {{"FromClaim", {"nic"}, kDriver, params}};
    reader_.Put(c);
    auto refused = preparer_->Prepare(Ref("uid-1"));
    EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied) << params;
  }
  EXPECT_FALSE(fs::exists(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
}

TEST_F(PreparerTest, ADeviceClassConfigMaySetIssmAndEnv) {
  ResourceClaim c = Claim("uid-1", {Ours("mlx5-0")});
  c.config = {{"FromClass", {}, kDriver, R"({"issm":true,"env":{"A":"b"}})"}};
  reader_.Put(c);
  auto r = preparer_->Prepare(Ref("uid-1"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string spec = Read(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json");
  EXPECT_NE(spec.find("issm0"), std::string::npos) << spec;
  EXPECT_NE(spec.find("A=b"), std::string::npos) << spec;
}

TEST_F(PreparerTest, AClaimMaySetTheEnvThatNamesItsDevices) {
  ResourceClaim c = Claim("uid-1", {Ours("mlx5-0")});
  c.config = {{"FromClaim", {}, kDriver, R"({"ncclEnv":true,"ucxEnv":true})"}};
  reader_.Put(c);
  ASSERT_TRUE(preparer_->Prepare(Ref("uid-1")).ok());
  const std::string spec = Read(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json");
  EXPECT_NE(spec.find("NCCL_IB_HCA"), std::string::npos) << spec;
  EXPECT_NE(spec.find("UCX_NET_DEVICES"), std::string::npos) << spec;
}

TEST_F(PreparerTest, AnOpaqueConfigOfAnUnknownSourceIsNobodysAndRefused) {
  ResourceClaim c = Claim("uid-1", {Ours("mlx5-0")});
  c.config = {{"FromSomewhere\n", {}, kDriver, R"({"ncclEnv":true})"}};
  reader_.Put(c);
  auto r = preparer_->Prepare(Ref("uid-1"));
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("\"FromSomewhere\\x0a\""), std::string::npos) << r.status().message();
  EXPECT_TRUE(preparer_->Claims().empty());
}

}  // namespace
}  // namespace rdmak8s::dra

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Issue 24 item 3: kubelet's namespace and name go into the API path; nothing else may.
TEST_F(PreparerTest, ANamespaceOrNameThatIsNotAKubernetesNameIsRefusedBeforeAnyRead) {
  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}));
  const ClaimRef traversal{"../../../../api/v1/namespaces/kube-system/secrets/admin-token?x=", "uid-1", "n"};
  auto r = preparer_->Prepare(traversal);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("claim namespace \"../../../../api/v1/namespaces/kube-system"),
            std::string::npos) << r.status().message();
  EXPECT_EQ(preparer_->Unprepare(traversal).code(), StatusCode::kInvalidArgument);

  const ClaimRef watch{"team", "uid-1", "x?watch=true&resourceVersion=0"};
  r = preparer_->Prepare(watch);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("claim name \"x?watch=true"), std::string::npos) << r.status().message();
  const ClaimRef control{"team", "uid-1", "nic\r\nX-Injected: 1"};
  r = preparer_->Prepare(control);
  EXPECT_NE(r.status().message().find("\\x0d\\x0a"), std::string::npos) << r.status().message();
  EXPECT_EQ(reader_.reads(), 0);
  EXPECT_TRUE(preparer_->Claims().empty());
}

// Issue 24 item 4: a reservedFor pod UID that cannot name a record never reaches the checkpoint.
TEST_F(PreparerTest, AReservedPodUidThatIsNotAPlainNameFailsThePrepareBeforeAnythingIsWritten) {
  reader_.Put(Claim("uid-1", {Ours("mlx5-0")}, {"pod-1", "../../etc"}));
  auto r = preparer_->Prepare(Ref("uid-1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("status.reservedFor[1] pod UID \"../../etc\""), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(preparer_->Claims().empty());
  Restart();
  EXPECT_TRUE(preparer_->Claims().empty());
  EXPECT_FALSE(fs::exists(options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json"));
  EXPECT_FALSE(fs::exists(options_.pod_devices_dir + "/pod-1"));
}

TEST_F(PreparerTest, AClaimAnOlderDriverCheckpointedWithABadPodUidCanStillBeUnprepared) {
  const std::string spec = options_.cdi_dir + "/rdma.rdmak8s.io-claim_uid-1.json";
  ClaimMap old{{"uid-1", {"uid-1", "team", "nic-claim", ClaimPhase::kPrepared, {}, {"../evil", "pod-1"}, spec}}};
  ASSERT_TRUE(Checkpoint(options_.state_dir, options_.driver_name).Save(old).ok());
  ASSERT_TRUE(WritePodClaimRecord(options_.pod_devices_dir, "pod-1", "rdma.rdmak8s.io", {"team", "nic-claim", "uid-1", {}}).ok());
  std::ofstream(spec) << "{}";
  Restart();
  Status s = preparer_->Unprepare(Ref("uid-1"));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(fs::exists(spec));
  EXPECT_EQ(ReadPodClaimRecords(options_.pod_devices_dir, "pod-1").status().code(), StatusCode::kNotFound);
  Restart();
  EXPECT_TRUE(preparer_->Claims().empty());
}

}  // namespace
}  // namespace rdmak8s::dra
