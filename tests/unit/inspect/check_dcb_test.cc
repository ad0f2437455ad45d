// The node-wide RoCE QoS checks (trust, DSCP map, PFC, ECN on the PF netdev) on the ConnectX-6
// Dx fixture (mlx5_roce_sriov), on a driver without ECN knobs (bnxt_re_roce) and Soft-RoCE on a
// veth without DCB (rxe_veth), with DCB and rtnetlink faked.
#include "check_dcb.h"

#include <gtest/gtest.h>

#include "check_fixture.h"

namespace rdmak8s::inspect {
namespace {

using testing::CheckNode;
using testing::Find;
using testing::PolicyWithQos;
using testing::RoceCheckTest;
using testing::kPf;
using testing::kQos;

TEST_F(RoceCheckTest, PfcOffOnTheRocePriorityFailsWithTheDcbCommand) {
  node.dcb.Find("ens1f0np0")->pfc.enabled = 0;
  CheckReport r = node.Run(PolicyWithQos(kQos));
  auto i = Find(r, kPf, "pfc");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "on none");
  EXPECT_NE(i.fix.find("dcb pfc set dev ens1f0np0 prio-pfc 3:on"), std::string::npos) << i.fix;
  EXPECT_FALSE(r.AllPassed());
}

TEST_F(RoceCheckTest, PfcOnAPriorityRoceDoesNotUseFailsUnlessAllowed) {
  node.dcb.Find("ens1f0np0")->pfc.enabled = (1 << 3) | (1 << 5);
  CheckPolicy policy = PolicyWithQos(kQos);
  auto i = Find(node.Run(policy), kPf, "pfc");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("5:off"), std::string::npos) << i.fix;
  policy.allow_pfc.insert(5);
  EXPECT_EQ(Find(node.Run(policy), kPf, "pfc").outcome, Outcome::kPass);
}

TEST_F(RoceCheckTest, TrustPcpWhereThePolicyWantsDscpFails) {
  node.dcb.Find("ens1f0np0")->trust = DcbTrust::kPcp;
  auto i = Find(node.Run(PolicyWithQos(kQos)), kPf, "dcb trust");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "pcp");
  EXPECT_EQ(i.fix, "dcb apptrust set dev ens1f0np0 order dscp pcp");
}

TEST_F(RoceCheckTest, TrustTableMissingIsNotCheckedAndSaysWhy) {
  node.dcb.Find("ens1f0np0")->trust = std::nullopt;
  auto i = Find(node.Run(PolicyWithQos(kQos)), kPf, "dcb trust");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_NE(i.note.find("no APP trust table"), std::string::npos);
}

TEST_F(RoceCheckTest, AppTableMappingTheTosElsewhereFailsAndPfcFollowsTheNodesMap) {
  node.dcb.Find("ens1f0np0")->app = {{kDcbAppSelDscp, 26, 4}};
  CheckReport r = node.Run(PolicyWithQos(kQos));
  auto map = Find(r, kPf, "dscp 26 -> priority");
  EXPECT_EQ(map.outcome, Outcome::kFail);
  EXPECT_EQ(map.seen, "4");
  EXPECT_EQ(map.fix, "dcb app replace dev ens1f0np0 dscp-prio 26:3");
  // Traffic really lands on 4 (the node's map), and PFC is off there.
  auto pfc = Find(r, kPf, "pfc");
  EXPECT_EQ(pfc.outcome, Outcome::kFail);
  EXPECT_NE(pfc.fix.find("4:on"), std::string::npos) << pfc.fix;
}

TEST_F(RoceCheckTest, TosThatTheMapSendsOutsideQosPfcIsAPolicyError) {
  CheckReport r = node.Run(PolicyWithQos(R"({"roceTos":106,"dscpToPriority":{"26":3},"pfc":[4]})"));
  auto i = Find(r, kPf, "tos vs pfc");
  ASSERT_FALSE(i.subject.empty());
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "DSCP 26 -> priority 3");
}

TEST_F(RoceCheckTest, EcnOffOnTheRocePriorityFailsWithTheSysfsWrite) {
  node.AddEcnKnobs("ens1f0np0");  // all back to 0
  auto i = Find(node.Run(PolicyWithQos(kQos)), kPf, "ecn priority 3");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("echo 1 > " + node.sys() + "/class/net/ens1f0np0/ecn/roce_rp/enable/3"),
            std::string::npos) << i.fix;
}

TEST(RoceCheckNoEcnTest, DriverWithoutEcnKnobIsNotCheckedRatherThanFailed) {
  CheckNode node("bnxt_re_roce");
  CheckReport r = node.Run(PolicyWithQos(kQos));
  bool saw = false;
  for (const CheckItem& i : r.items()) {
    if (i.check == "ecn priority 3") {
      saw = true;
      EXPECT_EQ(i.outcome, Outcome::kSkip);
      EXPECT_NE(i.note.find("no ECN knob"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw) << FormatReport(r);
}

TEST_F(RoceCheckTest, WithoutAQosPolicyPfcIsShownNotJudged) {
  auto i = Find(node.Run(CheckPolicy{}), kPf, "pfc");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_EQ(i.seen, "on 3");
}

TEST(RoceCheckRxeTest, SoftRoceOnAVethWithoutDcbFailsPfcWhenThePolicyWantsIt) {
  CheckNode node("rxe_veth");
  node.dcb.AddNetdev("veth0").unsupported = true;
  node.route.AddLink("veth0");
  node.route.AddAddress("veth0", "10.0.0.1");
  CheckReport r = node.Run(PolicyWithQos(kQos));
  auto pfc = Find(r, "rxe0 on veth0", "pfc");
  EXPECT_EQ(pfc.outcome, Outcome::kFail);
  EXPECT_NE(pfc.fix.find("veth0 has no DCB"), std::string::npos) << pfc.fix;
  EXPECT_EQ(Find(r, "rxe0 port 1", "roce v2 gids").outcome, Outcome::kPass);
}

}  // namespace
}  // namespace rdmak8s::inspect
