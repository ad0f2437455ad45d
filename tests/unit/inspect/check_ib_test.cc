// The InfiniBand checks on the ConnectX-6 IB fixture (mlx5_ib_2port: port 1 ACTIVE with LID 0x1a
// and SM 0x1 and PKeys 0xffff 0x8001; port 2 DOWN, no SM).
#include "check_ib.h"

#include <gtest/gtest.h>

#include "check_fixture.h"

namespace rdmak8s::inspect {
namespace {

using testing::CheckNode;
using testing::Find;

CheckPolicy PkeyPolicy(const std::string& pkey) {
  CheckPolicy p;
  auto nc = ParseQosArg(R"({"cniVersion":"1.0.0","name":"ib-net","type":"rdmak8s","pkey":")" +
                        pkey + "\"}");
  EXPECT_TRUE(nc.ok()) << nc.status().ToString();
  p.netconfs.push_back(*nc);
  return p;
}

TEST(IbCheckTest, ActivePortWithAnSmPassesAndDownPortFails) {
  CheckNode node("mlx5_ib_2port");
  CheckReport r = node.Run(CheckPolicy{});
  EXPECT_EQ(Find(r, "mlx5_0 port 1", "port state").outcome, Outcome::kPass);
  EXPECT_EQ(Find(r, "mlx5_0 port 1", "subnet manager").outcome, Outcome::kPass);
  EXPECT_EQ(Find(r, "mlx5_0 port 1", "subnet manager").seen, "sm_lid 0x0001, lid 0x001a");
  auto down = Find(r, "mlx5_0 port 2", "port state");
  EXPECT_EQ(down.outcome, Outcome::kFail);
  EXPECT_NE(down.fix.find("ibstat mlx5_0 2"), std::string::npos) << down.fix;
  auto sm = Find(r, "mlx5_0 port 2", "subnet manager");
  EXPECT_EQ(sm.outcome, Outcome::kFail);
  EXPECT_NE(sm.fix.find("opensm"), std::string::npos);
}

TEST(IbCheckTest, PkeyOfTheNetconfInThePortTablePasses) {
  CheckNode node("mlx5_ib_2port");
  // Compared without the membership bit, as the CNI does: 0x0001 is in the table as 0x8001.
  auto i = Find(node.Run(PkeyPolicy("0001")), "mlx5_0 port 1", "pkeys");
  EXPECT_EQ(i.outcome, Outcome::kPass);
  EXPECT_EQ(i.seen, "0xffff 0x8001");
}

TEST(IbCheckTest, PkeyMissingFromThePortTableFailsNamingTheSmPartitionConfig) {
  CheckNode node("mlx5_ib_2port");
  auto i = Find(node.Run(PkeyPolicy("8002")), "mlx5_0 port 1", "pkeys");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("0x0002"), std::string::npos) << i.fix;
  EXPECT_NE(i.fix.find("partitions.conf"), std::string::npos) << i.fix;
}

TEST(IbCheckTest, UmadOfEveryPortIsNeeded) {
  CheckNode node("mlx5_ib_2port");
  EXPECT_EQ(Find(node.Run(CheckPolicy{}), "mlx5_0", "char devices").seen,
            "uverbs0 rdma_cm umad0 umad1");
  std::filesystem::remove(node.dev() + "/infiniband/umad1");
  auto i = Find(node.Run(CheckPolicy{}), "mlx5_0", "char devices");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("umad1"), std::string::npos) << i.fix;
}

}  // namespace
}  // namespace rdmak8s::inspect
