#include "cni/sysfs_view.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "support/throwaway_netns.h"

namespace rdmak8s::cni {
namespace {

using rdmak8s::testing::NewThrowawayNetns;
using rdmak8s::testing::ShIn;

// class/net is netns-tagged: the node's /sys can't show a pod's netdev, a sysfs mounted inside
// the pod's netns can (and class/infiniband behaves the same way for moved RDMA devices), and it
// hides the netdevs of the netns it was opened from.
void ExpectShowsThePodsNetdevsAndHidesTheNodes(bool new_mount_api) {
  auto node = NewThrowawayNetns();
  auto pod = NewThrowawayNetns();
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(pod.ok());
  const std::string id = std::to_string(getpid() % 100000);
  const std::string pod_dev = "sv" + id, node_dev = "nd" + id;
  ASSERT_TRUE(ShIn(*pod, "ip link add " + pod_dev + " type veth peer name " + pod_dev + "p").ok());
  ASSERT_TRUE(ShIn(*node, "ip link add " + node_dev + " type veth peer name " + node_dev + "p").ok());
  EXPECT_NE(access(("/sys/class/net/" + pod_dev).c_str(), F_OK), 0);
  MountingSysfsView view(new_mount_api);
  std::string seen_root;
  bool pod_dev_seen = false, node_dev_seen = true, seen_from_another_thread = false;
  // Opened from the node's netns, as the plugin runs.
  Status s = RunInNetns(*node, [&]() -> Status {
    auto root = view.Open(*pod);
    if (!root.ok()) return root.status();
    seen_root = (*root)->path();
    pod_dev_seen = access((seen_root + "/class/net/" + pod_dev).c_str(), F_OK) == 0;
    node_dev_seen = access((seen_root + "/class/net/" + node_dev).c_str(), F_OK) == 0;
    std::thread other([&] {
      seen_from_another_thread = access((seen_root + "/class/net/" + pod_dev).c_str(), F_OK) == 0;
    });
    other.join();
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(pod_dev_seen);
  EXPECT_FALSE(node_dev_seen) << "a netdev of the node's netns shows in the pod's view";
  EXPECT_TRUE(seen_from_another_thread) << "the handle serves every thread of the process";
  EXPECT_NE(access(seen_root.c_str(), F_OK), 0) << "the view is released with its handle";
  EXPECT_NE(access(("/sys/class/net/" + pod_dev).c_str(), F_OK), 0) << "nothing leaked into the node";
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mounts, line)) {
    EXPECT_EQ(line.find("rdmak8s-sysfs-"), std::string::npos) << "left mounted: " << line;
  }
}

TEST(MountingSysfsViewTest, ShowsThePodsNetdevsAndHidesTheNodes) {
  ExpectShowsThePodsNetdevsAndHidesTheNodes(/*new_mount_api=*/true);
}

// Kernels before 5.2 (no fsopen/fsmount) get the same view through mount(2) in a private mount
// namespace.
TEST(MountingSysfsViewTest, WithoutTheNewMountApiShowsThePodsNetdevsAndHidesTheNodes) {
  ExpectShowsThePodsNetdevsAndHidesTheNodes(/*new_mount_api=*/false);
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
