// The node-wide checks: RDMA netns mode against pools and netconfs, the container runtime's
// memlock limit, hugepages.
#include "check_node.h"

#include <gtest/gtest.h>

#include "check_fixture.h"

namespace rdmak8s::inspect {
namespace {

using testing::CheckNode;
using testing::Find;

CheckPolicy PoolsPolicy(const std::string& config_json) {
  CheckPolicy p;
  auto cfg = dp::ParseConfig(config_json);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  p.plugin_config = *cfg;
  return p;
}

constexpr const char* kExclusivePool =
    R"({"pools":[{"name":"gpu-rdma","mode":"exclusive","selectors":{"transports":["roce"]}}]})";

TEST(NetnsModeCheckTest, ExclusivePoolOnASharedModeNodeFailsWithTheRdmaCommand) {
  CheckNode node("rxe_veth");
  auto i = Find(node.Run(PoolsPolicy(kExclusivePool)), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "shared");
  EXPECT_EQ(i.want, "exclusive");
  EXPECT_NE(i.note.find("pool gpu-rdma"), std::string::npos);
  EXPECT_NE(i.fix.find("rdma system set netns exclusive"), std::string::npos);
  EXPECT_NE(i.fix.find("netns_mode=0"), std::string::npos);
}

TEST(NetnsModeCheckTest, ExclusivePoolOnAnExclusiveNodePasses) {
  CheckNode node("rxe_veth");
  node.world->mode = RdmaNetnsMode::kExclusive;
  EXPECT_EQ(Find(node.Run(PoolsPolicy(kExclusivePool)), "node", "rdma netns mode").outcome,
            Outcome::kPass);
}

TEST(NetnsModeCheckTest, NetconfAskingForSharedOnAnExclusiveNodeFails) {
  CheckNode node("rxe_veth");
  node.world->mode = RdmaNetnsMode::kExclusive;
  CheckPolicy p;
  auto nc = ParseQosArg(R"({"cniVersion":"1.0.0","name":"n","type":"rdmak8s","netnsMode":"shared"})");
  ASSERT_TRUE(nc.ok());
  p.netconfs.push_back(*nc);
  auto i = Find(node.Run(p), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("rdma system set netns shared"), std::string::npos);
}

TEST(NetnsModeCheckTest, PoolsNeedingBothModesAreAPolicyError) {
  CheckNode node("rxe_veth");
  CheckPolicy p = PoolsPolicy(R"({"pools":[
      {"name":"a","mode":"exclusive","selectors":{}},{"name":"b","selectors":{"drivers":["rxe"]}}]})");
  CheckReport r = node.Run(p);
  bool conflict = false;
  for (const CheckItem& i : r.items()) {
    conflict |= i.check == "rdma netns mode" && i.outcome == Outcome::kFail &&
                i.want.find("pool a") != std::string::npos && i.want.find("pool b") != std::string::npos;
  }
  EXPECT_TRUE(conflict) << FormatReport(r);
}

TEST(NetnsModeCheckTest, WithoutPoolsTheModeIsShownNotJudged) {
  CheckNode node("rxe_veth");
  auto i = Find(node.Run(CheckPolicy{}), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_EQ(i.seen, "shared");
}

TEST(NetnsModeCheckTest, RdmaNetlinkErrorFailsNamingItWhenThePolicyNeedsAMode) {
  CheckNode node("rxe_veth");
  node.world->fail_get_mode = UnavailableError("rdma sys get: Connection refused");
  auto i = Find(node.Run(PoolsPolicy(kExclusivePool)), "node", "rdma netns mode");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.seen.find("Connection refused"), std::string::npos);
  node.world->fail_get_mode = UnavailableError("rdma sys get: Connection refused");
  EXPECT_EQ(Find(node.Run(CheckPolicy{}), "node", "rdma netns mode").outcome, Outcome::kSkip);
}

TEST(MemlockCheckTest, UnlimitedRuntimePasses) {
  CheckNode node("rxe_veth");
  auto i = Find(node.Run(CheckPolicy{}), "containerd (pid 100)", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kPass);
  EXPECT_EQ(i.seen, "unlimited");
}

TEST(MemlockCheckTest, LimitedRuntimeFailsWithTheSystemdSetting) {
  CheckNode node("rxe_veth");
  node.AddRuntime(100, "containerd", "8388608");
  auto i = Find(node.Run(CheckPolicy{}), "containerd (pid 100)", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "8 MiB");
  EXPECT_NE(i.fix.find("LimitMEMLOCK=infinity"), std::string::npos);
  EXPECT_NE(i.fix.find("systemctl edit containerd"), std::string::npos);
}

TEST(MemlockCheckTest, AMinimumBelowTheLimitPasses) {
  CheckNode node("rxe_veth");
  node.AddRuntime(100, "containerd", "8388608");
  CheckPolicy p;
  p.memlock_min_bytes = 8 << 20;
  EXPECT_EQ(Find(node.Run(p), "containerd (pid 100)", "memlock").outcome, Outcome::kPass);
}

TEST(MemlockCheckTest, EveryRuntimeProcessNamedIsChecked) {
  CheckNode node("rxe_veth");
  node.AddRuntime(200, "crio", "65536");
  node.AddRuntime(300, "bash", "65536");
  CheckReport r = node.Run(CheckPolicy{});
  EXPECT_EQ(Find(r, "crio (pid 200)", "memlock").outcome, Outcome::kFail);
  for (const CheckItem& i : r.items()) EXPECT_EQ(i.subject.find("bash"), std::string::npos);
}

TEST(MemlockCheckTest, NoRuntimeFoundIsNotCheckedAndSaysWhere) {
  CheckNode node("rxe_veth");
  CheckPolicy p;
  p.runtimes = {"dockerd"};
  auto i = Find(node.Run(p), "node", "memlock");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_NE(i.seen.find("no dockerd process in " + node.proc()), std::string::npos);
}

TEST(MemlockCheckTest, SoftLimitIsReadFromTheLimitsLine) {
  auto v = ParseMemlockSoftLimit("Max locked memory         65536                unlimited            bytes\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(**v, 65536u);
  EXPECT_EQ(ParseMemlockSoftLimit("Max open files 1 1 files\n").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseMemlockSoftLimit("Max locked memory  lots  lots bytes\n").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(HugepagesCheckTest, FewerPagesThanNeededFailWithTheSysfsWrite) {
  CheckNode node("rxe_veth");
  node.WriteFile(node.sys() + "/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "256\n");
  CheckPolicy p;
  p.hugepages = {{2048, 512}};
  auto i = Find(node.Run(p), "node", "hugepages 2048kB");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "256");
  EXPECT_NE(i.fix.find("echo 512 > " + node.sys() + "/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
            std::string::npos);
  p.hugepages = {{2048, 256}};
  EXPECT_EQ(Find(node.Run(p), "node", "hugepages 2048kB").outcome, Outcome::kPass);
}

TEST(HugepagesCheckTest, ASizeTheKernelDoesNotHaveFails) {
  CheckNode node("rxe_veth");
  CheckPolicy p;
  p.hugepages = {{1048576, 4}};
  auto i = Find(node.Run(p), "node", "hugepages 1048576kB");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("no 1048576kB hugepages"), std::string::npos);
}

TEST(HugepagesCheckTest, NoneAskedNoneChecked) {
  CheckNode node("rxe_veth");
  CheckReport r = node.Run(CheckPolicy{});
  for (const CheckItem& i : r.items()) {
    EXPECT_EQ(i.check.find("hugepages"), std::string::npos);
  }
}

}  // namespace
}  // namespace rdmak8s::inspect
