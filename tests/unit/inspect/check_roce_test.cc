// The RoCE checks on the ConnectX-6 Dx fixture (mlx5_roce_sriov: PF mlx5_0 on ens1f0np0, two VFs,
// an SF), with DCB and rtnetlink faked: the whole device, the PF netdev its QoS is judged on, and
// per port the MTU, the fabric MTU and the GIDs (the QoS checks themselves: check_dcb_test.cc).
#include "check_roce.h"

#include <gtest/gtest.h>

#include "check_fixture.h"
#include "rdmak8s/discovery/verbs.h"

namespace rdmak8s::inspect {
namespace {

using testing::Find;
using testing::PolicyWithQos;
using testing::RoceCheckTest;
using testing::kPf;
using testing::kQos;

TEST_F(RoceCheckTest, NodeSetUpAsThePolicySaysPassesEveryRoceCheck) {
  CheckReport r = node.Run(PolicyWithQos(kQos));
  for (const char* check : {"dcb trust", "dscp 26 -> priority", "pfc", "ecn priority 3"}) {
    auto i = Find(r, kPf, check);
    ASSERT_FALSE(i.subject.empty());
    EXPECT_EQ(i.outcome, Outcome::kPass) << check << ": " << FormatReport(r);
  }
  EXPECT_EQ(Find(r, kPf, "pfc").seen, "on 3");
  EXPECT_EQ(Find(r, "mlx5_0 port 1", "port state").outcome, Outcome::kPass);
  auto gids = Find(r, "mlx5_0 port 1", "roce v2 gids");
  EXPECT_EQ(gids.outcome, Outcome::kPass) << gids.fix;
  EXPECT_NE(gids.seen.find("192.168.100.1 (ens1f0np0.100)"), std::string::npos);
  EXPECT_EQ(Find(r, "mlx5_0", "char devices").outcome, Outcome::kPass);
}

TEST_F(RoceCheckTest, VfsAndSfAreJudgedOnTheirPfsDcb) {
  CheckReport r = node.Run(PolicyWithQos(kQos));
  EXPECT_EQ(Find(r, "mlx5_1 on ens1f0np0", "pfc").outcome, Outcome::kPass);
  EXPECT_EQ(Find(r, "mlx5_3 on ens1f0np0", "pfc").outcome, Outcome::kPass);
}

// The PF netdev is discovery's (RdmaDevice::pf_netdev), not read again: a VF whose physfn link
// went away after discovery is still judged on the PF's DCB, where a re-read would pick the VF's
// own netdev.
TEST_F(RoceCheckTest, TheDcbNetdevIsTheModelsPfNetdevNotReadAgain) {
  auto vf = node.env().discovery->DiscoverOne("mlx5_1");
  ASSERT_TRUE(vf.ok()) << vf.status().ToString();
  ASSERT_EQ(vf->pf_netdev, "ens1f0np0");
  std::filesystem::remove(node.sys() + "/bus/pci/devices/0000:5e:00.2/physfn");
  CheckReport r;
  CheckRoceDevice(*vf, PolicyWithQos(kQos), node.env(), r);
  EXPECT_EQ(Find(r, "mlx5_1 on ens1f0np0", "pfc").outcome, Outcome::kPass) << FormatReport(r);
}

TEST_F(RoceCheckTest, AddressWithoutItsRoceV2GidFails) {
  node.route.AddAddress("ens1f0np0", "192.168.10.9");
  auto i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "roce v2 gids");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("192.168.10.9 (ens1f0np0)"), std::string::npos) << i.fix;
}

TEST_F(RoceCheckTest, MissingUverbsNodeFailsTheCharDeviceCheck) {
  std::filesystem::remove(node.dev() + "/infiniband/uverbs0");
  CheckReport r = node.Run(CheckPolicy{});
  bool failed = false;
  for (const CheckItem& i : r.items()) {
    if (i.check == "char devices" && i.outcome == Outcome::kFail) {
      failed = true;
      EXPECT_NE(i.fix.find("/infiniband/uverbs0"), std::string::npos) << i.fix;
    }
  }
  EXPECT_TRUE(failed) << FormatReport(r);
}

class FixedVerbs : public VerbsQuery {
 public:
  explicit FixedVerbs(uint32_t active) : active_(active) {}
  StatusOr<VerbsAttrs> QueryDevice(std::string_view) override {
    VerbsAttrs a;
    a.phys_port_cnt = 1;
    a.ports = {{1, active_, 4096}};
    return a;
  }
  uint32_t active_;
};

TEST_F(RoceCheckTest, NetdevMtuTooSmallForTheActiveRdmaMtuFails) {
  FixedVerbs verbs(4096);
  SysfsDiscovery discovery({node.sys(), &verbs});
  node.env().discovery = &discovery;
  node.route.AddLink("ens1f0np0", 1500);
  auto i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "mtu");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.fix, "ip link set dev ens1f0np0 mtu 4192");
  node.route.AddLink("ens1f0np0", 9000);
  EXPECT_EQ(Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "mtu").outcome, Outcome::kPass);
}

TEST_F(RoceCheckTest, WithoutVerbsTheMtuIsShownNotJudged) {
  auto i = Find(node.Run(CheckPolicy{}), "mlx5_0 port 1", "mtu");
  EXPECT_EQ(i.outcome, Outcome::kSkip);
  EXPECT_NE(i.seen.find("ens1f0np0 mtu 9000 (room for RDMA MTU 4096)"), std::string::npos);
}

// A node cannot see its peers' MTU: the admin's --fabric-mtu is what a lowered one is judged by.
TEST_F(RoceCheckTest, NetdevMtuOtherThanTheFabricsFailsNamingTheNetdevAndBothMtus) {
  CheckPolicy policy;
  policy.fabric_mtu.all = 9000;
  auto i = Find(node.Run(policy), "mlx5_0 port 1", "fabric mtu");
  EXPECT_EQ(i.outcome, Outcome::kPass) << i.seen;
  EXPECT_EQ(i.seen, "ens1f0np0 mtu 9000");

  node.route.AddLink("ens1f0np0", 1500);
  CheckReport r = node.Run(policy);
  i = Find(r, "mlx5_0 port 1", "fabric mtu");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_EQ(i.seen, "ens1f0np0 mtu 1500");
  EXPECT_EQ(i.want, "9000 (--fabric-mtu)");
  EXPECT_EQ(i.fix.rfind("ip link set dev ens1f0np0 mtu 9000", 0), 0u) << i.fix;
  EXPECT_NE(i.note.find("RDMA MTU 1024 here, 4096 on the other nodes"), std::string::npos) << i.note;
  EXPECT_FALSE(r.AllPassed());
}

TEST_F(RoceCheckTest, FabricMtuIsEqualityNotAMinimum) {
  CheckPolicy policy;
  policy.fabric_mtu.all = 4200;
  EXPECT_EQ(Find(node.Run(policy), "mlx5_0 port 1", "fabric mtu").outcome, Outcome::kFail);
}

TEST_F(RoceCheckTest, FabricMtuOfOneNetdevOverridesTheBareOne) {
  CheckPolicy policy;
  ASSERT_TRUE(ParseFabricMtu("1500", policy.fabric_mtu).ok());
  ASSERT_TRUE(ParseFabricMtu("ens1f0np0=9000", policy.fabric_mtu).ok());
  auto i = Find(node.Run(policy), "mlx5_0 port 1", "fabric mtu");
  EXPECT_EQ(i.outcome, Outcome::kPass) << i.seen << " want " << i.want;
  EXPECT_EQ(i.want, "9000 (--fabric-mtu)");
}

TEST_F(RoceCheckTest, WithoutAFabricMtuThereIsNoFabricMtuLine) {
  CheckReport r = node.Run(CheckPolicy{});
  for (const CheckItem& i : r.items()) EXPECT_NE(i.check, "fabric mtu") << i.subject;
}

TEST(RoceMtuTest, RdmaMtuIsTheKernelsIboeMtu) {
  EXPECT_EQ(RdmaMtuForNetdevMtu(1500), 1024u);
  EXPECT_EQ(RdmaMtuForNetdevMtu(4192), 4096u);
  EXPECT_EQ(RdmaMtuForNetdevMtu(4191), 2048u);
  EXPECT_EQ(RdmaMtuForNetdevMtu(9000), 4096u);
  EXPECT_EQ(RdmaMtuForNetdevMtu(300), 0u);
}

}  // namespace
}  // namespace rdmak8s::inspect
