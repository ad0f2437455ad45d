// QosChanges on its own, over a state store and a sysfs tree in a temp dir: the conflict rule
// and what a restore does with a knob that someone else changed since we set it.
#include "cni/qos_changes.h"

#include <gtest/gtest.h>

#include "cni_test_util.h"
#include "fakes/fake_dcb_netlink.h"
#include "support/test_dirs.h"

namespace rdmak8s::cni {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

struct World {
  TempDir tmp;
  PluginOptions options;
  Logger log;
  FailureCode failure;
  StateStore store{tmp.path() + "/state"};
  DeviceResolver resolver{options, {}, tmp.path() + "/sys", nullptr, log, failure};
  QosChanges qos_changes{options, store, tmp.path() + "/sys", tmp.path() + "/config", QosPolicy{},
                   resolver, log, failure};
  World() {
    log.Configure(LogLevel::kError, "", -1);
    EXPECT_TRUE(store.Acquire().ok());  // creates the state dir
  }
};

AttachmentRecord Rec(const std::string& cid, std::map<std::string, std::string> knobs) {
  AttachmentRecord r;
  r.network = "n";
  r.container_id = cid;
  r.ifname = "net1";
  r.rdma_dev = "mlx5_0";
  r.transport = "roce";
  r.netns_mode = "shared";
  r.qos_settings = std::move(knobs);
  return r;
}

TEST(QosChangesTest, AQosSettingAnotherLiveAttachmentNeedsAtAnotherValueIs103NamingBoth) {
  World w;
  ASSERT_TRUE(w.store.Save(Rec("c1", {{"tos:mlx5_0:1", "96"}})).ok());
  EXPECT_TRUE(w.qos_changes.CheckQosConflicts(Rec("c2", {{"tos:mlx5_0:1", "96"}})).ok());
  Status s = w.qos_changes.CheckQosConflicts(Rec("c2", {{"tos:mlx5_0:1", "106"}}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(w.failure.code(), kErrQos);
  EXPECT_NE(s.message().find("n/c2:net1"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("n/c1:net1"), std::string::npos) << s.ToString();
  // Its own record is no conflict.
  EXPECT_TRUE(w.qos_changes.CheckQosConflicts(Rec("c1", {{"tos:mlx5_0:1", "106"}})).ok());
}

TEST(QosChangesTest, RestoreWritesBackOurOriginalButLeavesAQosSettingSomeoneChangedSince) {
  World w;
  const std::string ours = w.tmp.path() + "/sys/class/net/pf0/ecn/roce_rp/enable/3";
  const std::string theirs = w.tmp.path() + "/sys/class/net/pf0/ecn/roce_np/enable/3";
  ASSERT_TRUE(WriteFile(ours, "1\n"));    // as we set it
  ASSERT_TRUE(WriteFile(theirs, "7\n"));  // we set 1; someone set 7 since
  ASSERT_TRUE(w.store.SaveQosOriginals({{"ecn:pf0:rp:3", QosOriginal{"0", "1", ""}},
                                 {"ecn:pf0:np:3", QosOriginal{"0", "1", ""}}}).ok());
  std::vector<std::string> pending;
  ASSERT_TRUE(w.qos_changes.RestoreUnneededQosSettings("", &pending).ok());
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(ReadFile(ours), "0");
  EXPECT_EQ(ReadFile(theirs), "7");
  auto saved = w.store.LoadQosOriginals();
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->count("ecn:pf0:rp:3"), 0u) << "restored: off the books";
  ASSERT_EQ(saved->count("ecn:pf0:np:3"), 1u) << "our original stays on record";
  EXPECT_EQ(saved->at("ecn:pf0:np:3").left_as, "7");
}

TEST(QosChangesTest, AQosSettingALiveAttachmentStillNeedsIsNotRestored) {
  World w;
  const std::string knob = w.tmp.path() + "/sys/class/net/pf0/ecn/roce_rp/enable/3";
  ASSERT_TRUE(WriteFile(knob, "1\n"));
  ASSERT_TRUE(w.store.Save(Rec("c1", {{"ecn:pf0:rp:3", "1"}})).ok());
  ASSERT_TRUE(w.store.SaveQosOriginals({{"ecn:pf0:rp:3", QosOriginal{"0", "1", ""}}}).ok());
  std::vector<std::string> pending;
  ASSERT_TRUE(w.qos_changes.RestoreUnneededQosSettings("", &pending).ok());
  EXPECT_EQ(ReadFile(knob), "1");
  ASSERT_TRUE(w.qos_changes.RestoreUnneededQosSettings("n/c1:net1", &pending).ok());  // c1 leaves
  EXPECT_EQ(ReadFile(knob), "0");
}

// Upgrade: the state of a node an earlier release left (its knobs.json and a live record, the
// bytes it wrote) is read by this one: the record keeps every setting while it lives, and its
// DEL restores each kind where it lives.
TEST(QosChangesTest, TheKnobsJsonAndRecordsAnEarlierReleaseWroteAreRestoredByThisOne) {
  World w;
  FakeDcbNetlink dcb;
  auto& pf = dcb.AddNetdev("pf0");
  pf.trust = DcbTrust::kDscp;
  pf.pfc.enabled = 1 << 3;
  pf.app = {DcbAppEntry{kDcbAppSelDscp, 26, 3}};  // DSCP 26 -> priority 3
  w.options.new_dcb_netlink = [&dcb]() -> StatusOr<std::unique_ptr<DcbNetlink>> {
    return std::unique_ptr<DcbNetlink>(new SharedDcb(&dcb));
  };
  const std::string sys = w.tmp.path() + "/sys";
  const std::string files[] = {sys + "/class/net/pf0/ecn/roce_rp/enable/3",
                               sys + "/class/net/pf0/ecn/roce_np/enable/3",
                               sys + "/class/infiniband/mlx5_0/tc/1/traffic_class",
                               w.tmp.path() + "/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"};
  for (const std::string& f : {files[0], files[1]}) ASSERT_TRUE(WriteFile(f, "1\n"));
  for (const std::string& f : {files[2], files[3]}) ASSERT_TRUE(WriteFile(f, "106\n"));
  const std::string old = std::string(RDMAK8S_FIXTURES_DIR) + "/cni_state/v0.1";
  ASSERT_EQ(system(("cp -r " + old + "/. " + w.store.dir()).c_str()), 0);

  std::vector<std::string> pending;
  ASSERT_TRUE(w.qos_changes.RestoreUnneededQosSettings("", &pending).ok());
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(w.store.LoadQosOriginals()->size(), 7u) << "the live record needs every one";
  EXPECT_EQ(ReadFile(files[0]), "1");

  ASSERT_TRUE(w.qos_changes.RestoreUnneededQosSettings("rdma/c1:net1", &pending).ok());
  EXPECT_TRUE(pending.empty()) << pending.front();
  EXPECT_TRUE(w.store.LoadQosOriginals()->empty()) << "every original restored";
  for (const std::string& f : files) EXPECT_EQ(ReadFile(f), "0") << f;
  EXPECT_EQ(pf.trust, DcbTrust::kPcp);
  EXPECT_EQ(pf.pfc.enabled, 0);
  EXPECT_TRUE(pf.app.empty());
}

}  // namespace
}  // namespace rdmak8s::cni
