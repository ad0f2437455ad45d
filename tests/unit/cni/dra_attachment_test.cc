// Tests of the facts the CNI leaves for the DRA driver's claim status (cni/dra_attachment.h).
#include "cni/dra_attachment.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "rdmak8s/records/claim_gid_spec.h"
#include "support/temp_dir.h"

namespace rdmak8s::cni {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kUid[] = "pod-uid-1";

AttachmentRecord Rec() {
  AttachmentRecord r;
  r.network = "roce";
  r.container_id = "c1";
  r.ifname = "net1";
  r.rdma_dev = "mlx5_1";
  r.ports = {1};
  r.qos_settings = {{"trust:ens1f0", "dscp"}, {"tos:mlx5_1:1", "106"}, {"pfc:ens1f0", "3"}};
  return r;
}

json Result() {
  return {{"interfaces", {{{"name", "eth0"}, {"mac", "02:00:00:00:00:09"}, {"sandbox", "/ns"}},
                          {{"name", "net1"}, {"mac", "02:00:00:00:00:01"}, {"sandbox", "/ns"}}}},
          {"ips", {{{"address", "10.1.0.2/16"}, {"interface", 0}},
                   {{"address", "10.78.0.9/24"}, {"interface", 1}},
                   {{"address", "fd00::9/64"}, {"interface", 1}}}}};
}

std::vector<PodClaimRecord> Records() {
  return {{"team", "nic", "uid-nic", {{"rdma", kDriver, "node-a", "mlx5-1", "mlx5_1", "0000:3b:00.1"},
                                      {"other", kDriver, "node-a", "mlx5-2", "mlx5_2", "0000:3b:00.2"}}},
          {"team", "shared", "uid-shared", {{"nic", kDriver, "node-a", "mlx5-1", "mlx5_1", "0000:3b:00.1"}}}};
}

TEST(DraAttachment, FactsNameEveryClaimDeviceOfTheWiredDeviceWithThePodInterfacesAddresses) {
  json result = Result();
  AddOutcome add{&result, {{"fd00::9", "fd00:0000:0000:0000:0000:0000:0000:0009", 1, 4},
                           {"10.78.0.9", "0000:0000:0000:0000:0000:ffff:0a4e:0009", 1, 3}},
                 std::nullopt};
  std::vector<AttachmentFacts> facts = DraAttachmentFacts(Records(), Rec(), add);
  ASSERT_EQ(facts.size(), 2u);
  EXPECT_EQ(facts[0].claim_uid, "uid-nic");
  EXPECT_EQ(facts[1].claim_uid, "uid-shared");
  const AttachmentFacts& f = facts[0];
  EXPECT_EQ(f.device, "mlx5-1");
  EXPECT_EQ(f.ips, (std::vector<std::string>{"10.78.0.9/24", "fd00::9/64"}));  // not eth0's
  EXPECT_EQ(f.hardware_address, "02:00:00:00:00:01");
  EXPECT_EQ(f.gid, "0000:0000:0000:0000:0000:ffff:0a4e:0009");  // the first address's
  EXPECT_EQ(f.gid_index, 3u);
  EXPECT_EQ(f.qos, (std::vector<std::string>{"pfc", "tos", "trust"}));
  EXPECT_TRUE(CheckAttachmentFacts(f).ok()) << CheckAttachmentFacts(f).message();
}

TEST(DraAttachment, AddOnADraNodeWritesTheFactsAndDelRemovesThem) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods";
  for (const auto& r : Records()) ASSERT_TRUE(WritePodClaimRecord(dir, kUid, kDriver, r).ok());
  json result = Result();
  Logger log;
  Status s = RecordDraAttachment({dir, tmp.path() + "/cdi"}, std::string("K8S_POD_UID=") + kUid, Rec(),
                                 {&result, {}, 0x8001}, log);
  ASSERT_TRUE(s.ok()) << s.message();
  auto read = ReadAttachmentFacts(dir, "uid-nic", kDriver);
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].pkey, 0x8001);
  ASSERT_TRUE(ForgetDraAttachment(dir, Rec()).ok());
  EXPECT_TRUE(ReadAttachmentFacts(dir, "uid-nic", kDriver)->empty());
  EXPECT_TRUE(ReadAttachmentFacts(dir, "uid-shared", kDriver)->empty());
}

TEST(DraAttachment, APodWithoutClaimsOrWithoutAUidWritesNothing) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods";
  json result = Result();
  Logger log;
  const DraPaths paths{dir, tmp.path() + "/cdi"};
  EXPECT_TRUE(RecordDraAttachment(paths, "K8S_POD_UID=other-pod", Rec(), {&result, {}, std::nullopt}, log).ok());
  EXPECT_TRUE(RecordDraAttachment(paths, "IgnoreUnknown=1", Rec(), {&result, {}, std::nullopt}, log).ok());
  EXPECT_FALSE(fs::exists(dir + "/.attachments"));
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

AddOutcome WithGid(const json* result) {
  return {result, {{"10.78.0.9", "0000:0000:0000:0000:0000:ffff:0a4e:0009", 1, 3}}, std::nullopt};
}

TEST(DraAttachment, AddFillsInTheGidIndexSpecTheDriverMadeForTheClaim) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods", cdi = tmp.path() + "/cdi";
  fs::create_directories(cdi);
  for (const auto& r : Records()) ASSERT_TRUE(WritePodClaimRecord(dir, kUid, kDriver, r).ok());
  // The driver made one for uid-nic's mlx5-1 only (its request asked, and one pod holds it).
  ASSERT_TRUE(WriteClaimGidSpecIfAbsent(cdi, kDriver, "uid-nic", "mlx5-1").ok());
  json result = Result();
  Logger log;
  Status s = RecordDraAttachment({dir, cdi}, std::string("K8S_POD_UID=") + kUid, Rec(), WithGid(&result), log);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string spec = Slurp(*ClaimGidSpecPath(cdi, kDriver, "uid-nic", "mlx5-1"));
  EXPECT_EQ(spec, BuildClaimGidSpec(kDriver, "uid-nic", "mlx5-1", 3u));
  EXPECT_NE(spec.find("\"NCCL_IB_GID_INDEX=3\""), std::string::npos) << spec;
  EXPECT_NE(spec.find("\"UCX_IB_GID_INDEX=3\""), std::string::npos) << spec;
  // No spec for the claim that did not get one (shared by several pods, or not asked): none made.
  EXPECT_FALSE(fs::exists(*ClaimGidSpecPath(cdi, kDriver, "uid-shared", "mlx5-1")));
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cdi)) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(DraAttachment, AGidIndexSpecPathThatIsNotAFileIsAnErrorAndNothingIsWritten) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods", cdi = tmp.path() + "/cdi";
  fs::create_directories(cdi);
  for (const auto& r : Records()) ASSERT_TRUE(WritePodClaimRecord(dir, kUid, kDriver, r).ok());
  const std::string path = *ClaimGidSpecPath(cdi, kDriver, "uid-nic", "mlx5-1");
  fs::create_symlink(tmp.path() + "/elsewhere.json", path);
  json result = Result();
  Logger log;
  Status s = RecordDraAttachment({dir, cdi}, std::string("K8S_POD_UID=") + kUid, Rec(), WithGid(&result), log);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_TRUE(fs::is_symlink(path));
  EXPECT_FALSE(fs::exists(tmp.path() + "/elsewhere.json"));
}

}  // namespace
}  // namespace rdmak8s::cni
