// Mover on its own, over a state store in a temp dir: who holds a device in a pod, and a release
// that hands the move to the next holder instead of bringing the device home.
#include "cni/mover.h"

#include <gtest/gtest.h>

#include "cni_test_util.h"

namespace rdmak8s::cni {
namespace {

using testing::TempDir;

AttachmentRecord Rec(const std::string& cid, const std::string& dev, const std::string& netns) {
  AttachmentRecord r;
  r.network = "n";
  r.container_id = cid;
  r.ifname = "net1";
  r.netns = netns;
  r.rdma_dev = dev;
  r.transport = "roce";
  r.netns_mode = "exclusive";
  return r;
}

TEST(MoverTest, OtherHolderIsAnotherAttachmentOfTheSamePodOverTheSameDevice) {
  const auto me = Rec("c1", "mlx5_0", "/run/netns/a");
  std::vector<AttachmentRecord> records = {me, Rec("c2", "mlx5_1", "/run/netns/a"),
                                           Rec("c3", "mlx5_0", "/run/netns/b")};
  EXPECT_EQ(OtherHolder(records, me), nullptr) << "another device, or another pod, is no holder";
  records.push_back(Rec("c4", "mlx5_0", "/run/netns/a"));
  const AttachmentRecord* holder = OtherHolder(records, me);
  ASSERT_NE(holder, nullptr);
  EXPECT_EQ(holder->container_id, "c4");
}

TEST(MoverTest, ReleaseOfTheMoverHandsTheMoveToTheNextHolderAndKeepsTheDeviceInThePod) {
  TempDir tmp;
  PluginOptions options;  // no RDMA netlink at all: bringing the device home would fail
  Logger log;
  log.Configure(LogLevel::kError, "", -1);
  FailureCode failure;
  StateStore store(tmp.path() + "/state");
  ASSERT_TRUE(store.Acquire().ok());
  DeviceResolver resolver(options, {}, tmp.path() + "/sys", nullptr, log, failure);
  QosChanges qos_changes(options, store, tmp.path() + "/sys", tmp.path() + "/config", QosPolicy{}, resolver,
                   log, failure);
  Mover mover(options, store, qos_changes, resolver, log, failure);
  // The pod's netns is this test's own: it exists, so a release without a next holder would go to
  // RDMA netlink to bring the device home.
  auto mine = Rec("c1", "mlx5_0", "/proc/self/ns/net");
  mine.moved = true;
  auto next_holder = Rec("c1", "mlx5_0", "/proc/self/ns/net");
  next_holder.ifname = "net2";
  ASSERT_TRUE(store.Save(mine).ok());
  ASSERT_TRUE(store.Save(next_holder).ok());
  Status s = mover.Release(mine);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(store.Load("n", "c1", "net1").status().code(), StatusCode::kNotFound);
  auto now = store.Load("n", "c1", "net2");
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_TRUE(now->moved) << "the next holder brings the device home now";
  // The next holder, the last holder, goes home through RDMA netlink: none here, so 101, record kept.
  s = mover.Release(*now);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(failure.code(), kErrWiring) << s.ToString();
  EXPECT_TRUE(store.Load("n", "c1", "net2").ok());
}

}  // namespace
}  // namespace rdmak8s::cni
