// Tests of the facts the CNI leaves for the DRA driver's claim status (cni/dra_attachment.h).
#include "cni/dra_attachment.h"

#include <filesystem>

#include <gtest/gtest.h>

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
  Status s = RecordDraAttachment(dir, std::string("K8S_POD_UID=") + kUid, Rec(), {&result, {}, 0x8001});
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
  EXPECT_TRUE(RecordDraAttachment(dir, "K8S_POD_UID=other-pod", Rec(), {&result, {}, std::nullopt}).ok());
  EXPECT_TRUE(RecordDraAttachment(dir, "IgnoreUnknown=1", Rec(), {&result, {}, std::nullopt}).ok());
  EXPECT_FALSE(fs::exists(dir + "/.attachments"));
}

}  // namespace
}  // namespace rdmak8s::cni
