// The real DcbNetlink against this kernel: veth has no dcbnl_ops, so every IEEE DCB request is
// answered EOPNOTSUPP (net/dcb/dcbnl.c dcb_doit), which must surface as kUnimplemented; a
// missing netdev is ENODEV -> kNotFound. Runs in a throwaway netns (needs root).
#include "rdmak8s/netlink/dcb_netlink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/throwaway_netns.h"

namespace rdmak8s {
namespace {

using ::testing::HasSubstr;
using testing::NewThrowawayNetns;
using testing::ShIn;

class DcbNetlinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ns = NewThrowawayNetns();
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    ns_ = std::move(*ns);
    ASSERT_TRUE(ShIn(ns_, "ip link add d0 type veth peer name d1").ok());
  }
  Status In(const std::function<Status(DcbNetlink&)>& fn) {
    return RunInNetns(ns_, [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(auto dcb, NewDcbNetlink());
      return fn(*dcb);
    });
  }
  Netns ns_;
};

TEST_F(DcbNetlinkTest, VethWithoutDcbOpsIsUnimplementedForEveryCall) {
  Status s = In([](DcbNetlink& dcb) -> Status {
    auto pfc = dcb.GetPfc("d0");
    EXPECT_EQ(pfc.status().code(), StatusCode::kUnimplemented) << pfc.status().ToString();
    EXPECT_THAT(pfc.status().message(), HasSubstr("d0"));
    EXPECT_EQ(dcb.SetPfcEnabled("d0", 0x08).code(), StatusCode::kUnimplemented);
    EXPECT_EQ(dcb.GetApp("d0").status().code(), StatusCode::kUnimplemented);
    DcbAppEntry e{.selector = kDcbAppSelDscp, .protocol = 26, .priority = 3};
    EXPECT_EQ(dcb.AddApp("d0", {e}).code(), StatusCode::kUnimplemented);
    EXPECT_EQ(dcb.DelApp("d0", {e}).code(), StatusCode::kUnimplemented);
    EXPECT_EQ(dcb.GetTrust("d0").status().code(), StatusCode::kUnimplemented);
    EXPECT_EQ(dcb.SetTrust("d0", DcbTrust::kDscp).code(), StatusCode::kUnimplemented);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(DcbNetlinkTest, MissingNetdevIsNotFound) {
  Status s = In([](DcbNetlink& dcb) -> Status {
    auto pfc = dcb.GetPfc("nosuch0");
    EXPECT_EQ(pfc.status().code(), StatusCode::kNotFound) << pfc.status().ToString();
    EXPECT_THAT(pfc.status().message(), HasSubstr("nosuch0"));
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(DcbNetlinkTest, BadNameIsRejectedBeforeAskingTheKernel) {
  Status s = In([](DcbNetlink& dcb) -> Status {
    EXPECT_EQ(dcb.GetPfc("").status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(dcb.AddApp("name-longer-than-16", {{}}).code(), StatusCode::kInvalidArgument);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace rdmak8s
