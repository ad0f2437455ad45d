// How the node check's results print and what they add up to.
#include "check_result.h"

#include <gtest/gtest.h>

namespace rdmak8s::inspect {
namespace {

CheckReport Sample() {
  CheckReport r;
  r.Add({"mlx5_0 port 1", "port state", Outcome::kPass, "ACTIVE", "ACTIVE", "", ""});
  r.Add({"mlx5_0 on ens1f0np0", "pfc", Outcome::kFail, "on none", "on 3",
         "dcb pfc set dev ens1f0np0 prio-pfc 3:on", ""});
  r.Add({"irdma0", "pfc", Outcome::kSkip, "", "", "", "iWARP runs over TCP: no PFC needed"});
  return r;
}

TEST(CheckResultTest, TableMarksEachLineAndPutsTheFixUnderIt) {
  std::string t = FormatReport(Sample());
  EXPECT_NE(t.find("✔ mlx5_0 port 1  port state: ACTIVE  (want ACTIVE)\n"), std::string::npos) << t;
  EXPECT_NE(t.find("✘ mlx5_0 on ens1f0np0  pfc: on none  (want on 3)\n"
                   "    fix: dcb pfc set dev ens1f0np0 prio-pfc 3:on\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("– irdma0  pfc: -  [iWARP runs over TCP: no PFC needed]\n"), std::string::npos) << t;
  EXPECT_NE(t.find("1 passed, 1 failed, 1 not checked\n"), std::string::npos) << t;
}

TEST(CheckResultTest, JsonHasEveryFieldWithNullForEmpty) {
  nlohmann::json j = ReportToJson(Sample());
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["failures"], 1);
  ASSERT_EQ(j["checks"].size(), 3u);
  EXPECT_EQ(j["checks"][1]["result"], "fail");
  EXPECT_EQ(j["checks"][1]["fix"], "dcb pfc set dev ens1f0np0 prio-pfc 3:on");
  EXPECT_TRUE(j["checks"][0]["fix"].is_null());
  EXPECT_EQ(j["checks"][2]["result"], "skip");
}

TEST(CheckResultTest, SkipsDoNotFailTheReport) {
  CheckReport r;
  r.Add({"irdma0", "pfc", Outcome::kSkip, "", "", "", ""});
  EXPECT_TRUE(r.AllPassed());
}

}  // namespace
}  // namespace rdmak8s::inspect
