// The iWARP checks on the E810 in iWARP mode (irdma_iwarp) and Soft-iWARP (siw_veth).
#include "check_iwarp.h"

#include <gtest/gtest.h>

#include "check_fixture.h"

namespace rdmak8s::inspect {
namespace {

using testing::CheckNode;
using testing::Find;

TEST(IwarpCheckTest, RdmaCmPresentPassesAndPfcIsSaidNotNeeded) {
  CheckNode node("irdma_iwarp");
  CheckReport r = node.Run(testing::PolicyWithQos(R"({"pfc":[3]})"));
  EXPECT_EQ(Find(r, "irdma0", "rdma_cm").outcome, Outcome::kPass);
  auto pfc = Find(r, "irdma0", "pfc");
  EXPECT_EQ(pfc.outcome, Outcome::kSkip);
  EXPECT_NE(pfc.note.find("no PFC needed"), std::string::npos);
  EXPECT_EQ(Find(r, "irdma0 port 1", "port state").outcome, Outcome::kPass);
  EXPECT_EQ(node.dcb.set_calls, 0);
}

TEST(IwarpCheckTest, MissingRdmaCmNodeFailsWithHowToMakeIt) {
  CheckNode node("siw_veth");
  std::filesystem::remove(node.dev() + "/infiniband/rdma_cm");
  auto i = Find(node.Run(CheckPolicy{}), "siw0", "rdma_cm");
  EXPECT_EQ(i.outcome, Outcome::kFail);
  EXPECT_NE(i.fix.find("mknod " + node.dev() + "/infiniband/rdma_cm c"), std::string::npos) << i.fix;
}

}  // namespace
}  // namespace rdmak8s::inspect
