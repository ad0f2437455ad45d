#include "cni/sysfs_view.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "support/throwaway_netns.h"

namespace rdmak8s::cni {
namespace {

using rdmak8s::testing::NewThrowawayNetns;
using rdmak8s::testing::ShIn;

// class/net is netns-tagged: the node's /sys can't show a pod's netdev, a sysfs mounted inside
// the pod's netns can (and class/infiniband behaves the same way for moved RDMA devices).
TEST(MountingSysfsViewTest, ShowsThePodsNetdevsThatTheNodesSysfsCannot) {
  auto pod = NewThrowawayNetns();
  ASSERT_TRUE(pod.ok());
  const std::string name = "sv" + std::to_string(getpid() % 100000);
  ASSERT_TRUE(ShIn(*pod, "ip link add " + name + " type veth peer name " + name + "p").ok());
  EXPECT_NE(access(("/sys/class/net/" + name).c_str(), F_OK), 0);
  MountingSysfsView view;
  std::string seen_root;
  bool seen = false, lo_of_node_hidden = false;
  Status s = view.InNetns(*pod, [&](const std::string& root) -> Status {
    seen_root = root;
    seen = access((root + "/class/net/" + name).c_str(), F_OK) == 0;
    lo_of_node_hidden = access((root + "/class/net/lo").c_str(), F_OK) == 0;  // the pod's own lo
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(seen);
  EXPECT_TRUE(lo_of_node_hidden);
  EXPECT_NE(access(seen_root.c_str(), F_OK), 0) << "the temporary mount point is removed";
  EXPECT_NE(access(("/sys/class/net/" + name).c_str(), F_OK), 0) << "nothing leaked into the node";
}

TEST(MountingSysfsViewTest, ReturnsTheReadersStatus) {
  auto pod = NewThrowawayNetns();
  ASSERT_TRUE(pod.ok());
  MountingSysfsView view;
  Status s = view.InNetns(*pod, [](const std::string&) { return NotFoundError("x"); });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST(FixedSysfsViewTest, HandsBackItsRoot) {
  FixedSysfsView view("/fixture");
  std::string root;
  ASSERT_TRUE(view.InNetns(Netns(), [&](const std::string& r) {
    root = r;
    return Status::Ok();
  }).ok());
  EXPECT_EQ(root, "/fixture");
}

}  // namespace
}  // namespace rdmak8s::cni
