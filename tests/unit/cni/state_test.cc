#include "cni/state.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "cni_test_util.h"
#include "support/planted_files.h"
#include "support/test_dirs.h"

namespace rdmak8s::cni {
namespace {

using testing::TempDir;

AttachmentRecord Rec(const std::string& cid, const std::string& ifname = "net1") {
  AttachmentRecord r;
  r.network = "rdma";
  r.container_id = cid;
  r.ifname = ifname;
  r.netns = "/run/netns/" + cid;
  r.rdma_dev = "mlx5_1";
  r.transport = "roce";
  r.moved = true;
  r.qos_settings = {{"pfc:ens1f0np0:3", "on"}};
  return r;
}

TEST(StateStoreTest, SaveLoadListRemove) {
  TempDir t;
  StateStore s(t.path() + "/state");
  auto lock = s.Acquire();
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  ASSERT_TRUE(s.Save(Rec("c1")).ok());
  ASSERT_TRUE(s.Save(Rec("c2")).ok());
  auto r = s.Load("rdma", "c1", "net1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->rdma_dev, "mlx5_1");
  EXPECT_TRUE(r->moved);
  EXPECT_EQ(r->qos_settings.at("pfc:ens1f0np0:3"), "on");
  auto all = s.List();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
  ASSERT_TRUE(s.Remove("rdma", "c1", "net1").ok());
  ASSERT_TRUE(s.Remove("rdma", "c1", "net1").ok()) << "removing twice is fine";
  EXPECT_EQ(s.Load("rdma", "c1", "net1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.List()->size(), 1u);
}

// Under the lock a listing is kept (a DEL lists three times), but what this store changes is in
// the next listing, and what another process writes once the lock is released is seen again.
TEST(StateStoreTest, AListingKeptUnderTheLockFollowsEveryChange) {
  TempDir t;
  StateStore s(t.path() + "/state");
  auto ids = [&](const std::string& network = "") {
    std::vector<std::string> out;
    auto l = s.List(network);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (l.ok()) {
      for (const auto& r : *l) out.push_back(r.network + "/" + r.container_id);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  {
    auto lock = s.Acquire();
    ASSERT_TRUE(lock.ok()) << lock.status().ToString();
    ASSERT_TRUE(s.Save(Rec("c1")).ok());
    EXPECT_EQ(ids(), std::vector<std::string>({"rdma/c1"}));
    ASSERT_TRUE(s.Save(Rec("c2")).ok());
    AttachmentRecord other = Rec("c3");
    other.network = "other";
    ASSERT_TRUE(s.Save(other).ok());
    EXPECT_EQ(ids(), std::vector<std::string>({"other/c3", "rdma/c1", "rdma/c2"}));
    EXPECT_EQ(ids("rdma"), std::vector<std::string>({"rdma/c1", "rdma/c2"}));
    ASSERT_TRUE(s.Remove("rdma", "c1", "net1").ok());
    EXPECT_EQ(ids(), std::vector<std::string>({"other/c3", "rdma/c2"}));
    // A corrupt record written meanwhile: the next listing quarantines it instead of listing it.
    testing::WriteFile(t.path() + "/state/attachments/rdma/c9:net1.json", "{not json");
  }
  // Another process (another store on the same dir) changes the records between two locks.
  {
    StateStore theirs(t.path() + "/state");
    auto lock = theirs.Acquire();
    ASSERT_TRUE(lock.ok());
    ASSERT_TRUE(theirs.Save(Rec("c4")).ok());
    ASSERT_TRUE(theirs.Remove("other", "c3", "net1").ok());
  }
  auto lock = s.Acquire();
  ASSERT_TRUE(lock.ok());
  EXPECT_EQ(ids(), std::vector<std::string>({"rdma/c2", "rdma/c4"}));
  EXPECT_EQ(ids(), std::vector<std::string>({"rdma/c2", "rdma/c4"})) << "the kept listing";
}

TEST(StateStoreTest, NamesThatWouldEscapeTheDirAreRefused) {
  TempDir t;
  StateStore s(t.path());
  AttachmentRecord r = Rec("c1");
  r.container_id = "../../etc";
  EXPECT_EQ(s.Save(r).code(), StatusCode::kInvalidArgument);
  r = Rec("c1", "../x");
  EXPECT_EQ(s.Save(r).code(), StatusCode::kInvalidArgument);
  r = Rec("c1");
  r.network = "a/b";
  EXPECT_EQ(s.Save(r).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Load("..", "c", "net1").status().code(), StatusCode::kInvalidArgument);
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(StateStoreTest, ACorruptRecordIsQuarantinedWithOneErrorAndTheOthersAreStillListed) {
  TempDir t;
  std::vector<std::string> reported;
  StateStore s(t.path(), [&](const std::string& m) { reported.push_back(m); });
  ASSERT_TRUE(s.Save(Rec("c1")).ok());
  ASSERT_TRUE(s.Save(Rec("c2")).ok());
  ASSERT_TRUE(testing::WriteFile(t.path() + "/attachments/rdma/c1:net1.json", "{trunc"));
  auto all = s.List();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].container_id, "c2");
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_NE(reported[0].find("c1:net1.json"), std::string::npos) << reported[0];
  EXPECT_NE(reported[0].find("quarantine"), std::string::npos) << reported[0];
  EXPECT_EQ(Entries(t.path() + "/attachments/rdma"), std::vector<std::string>{"c2:net1.json"});
  auto q = Entries(t.path() + "/quarantine");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(testing::ReadFile(t.path() + "/quarantine/" + q[0]), "{trunc") << "kept for an admin";
  ASSERT_TRUE(s.List().ok());
  EXPECT_EQ(reported.size(), 1u) << "one error line, not one per later command";
}

TEST(StateStoreTest, ForeignEntriesAreQuarantinedNotTrusted) {
  TempDir t;
  std::vector<std::string> reported;
  StateStore s(t.path(), [&](const std::string& m) { reported.push_back(m); });
  ASSERT_TRUE(s.Save(Rec("c1")).ok());
  // A record under c2's name that says it is c9's: DEL of c2 would undo c9.
  AttachmentRecord other = Rec("c9");
  ASSERT_TRUE(testing::WriteFile(t.path() + "/attachments/rdma/c2:net1.json", other.ToJson().dump()));
  // A link named like a record, and a directory.
  ASSERT_TRUE(testing::WriteFile(t.path() + "/outside.json", Rec("c3").ToJson().dump()));
  ASSERT_EQ(symlink((t.path() + "/outside.json").c_str(), (t.path() + "/attachments/rdma/c3:net1.json").c_str()), 0);
  ASSERT_EQ(mkdir((t.path() + "/attachments/rdma/c4:net1.json").c_str(), 0700), 0);
  // A network directory that is a link.
  ASSERT_EQ(symlink("rdma", (t.path() + "/attachments/evil").c_str()), 0);
  auto all = s.List();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].container_id, "c1");
  EXPECT_EQ(reported.size(), 4u);
  EXPECT_EQ(Entries(t.path() + "/attachments"), std::vector<std::string>{"rdma"});
  EXPECT_EQ(Entries(t.path() + "/attachments/rdma"), std::vector<std::string>{"c1:net1.json"});
  EXPECT_EQ(s.Load("rdma", "c2", "net1").status().code(), StatusCode::kNotFound);
}

TEST(StateStoreTest, LoadingACorruptRecordQuarantinesItAndFindsNone) {
  TempDir t;
  std::vector<std::string> reported;
  StateStore s(t.path(), [&](const std::string& m) { reported.push_back(m); });
  ASSERT_TRUE(testing::WriteFile(t.path() + "/attachments/rdma/c1:net1.json", "[]"));
  auto r = s.Load("rdma", "c1", "net1");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find("quarantine"), std::string::npos) << r.status().message();
  EXPECT_EQ(reported.size(), 1u);
  EXPECT_EQ(Entries(t.path() + "/quarantine").size(), 1u);
}

// Records are read through the one safe reader: a FIFO at a record's name never blocks the ADD
// or DEL, and a record larger than any we write (here a valid one, padded) is not read but
// quarantined like any other file that cannot be ours.
TEST(StateStoreTest, AFifoOrAnOversizedFileAtARecordIsQuarantinedWithoutBlocking) {
  TempDir t;
  std::vector<std::string> reported;
  StateStore s(t.path(), [&](const std::string& m) { reported.push_back(m); });
  ASSERT_TRUE(s.Save(Rec("c1")).ok());
  const std::string fifo = t.path() + "/attachments/rdma/c2:net1.json";
  rdmak8s::testing::PlantFifo(fifo);
  StatusOr<AttachmentRecord> r = InternalError("not called");
  EXPECT_TRUE(rdmak8s::testing::ReturnsWithoutBlockingOn(fifo, [&] { r = s.Load("rdma", "c2", "net1"); }));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();

  std::string padded = Rec("c3").ToJson().dump();
  padded.append((size_t{1} << 20) + 1 - padded.size(), ' ');
  ASSERT_TRUE(testing::WriteFile(t.path() + "/attachments/rdma/c3:net1.json", padded));
  r = s.Load("rdma", "c3", "net1");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find("larger than 1048576 bytes"), std::string::npos) << r.status().message();
  EXPECT_EQ(reported.size(), 2u);
  EXPECT_EQ(Entries(t.path() + "/attachments/rdma"), std::vector<std::string>{"c1:net1.json"});
}

TEST(StateStoreTest, TheStateDirIsPrivateAndALinkedOrForeignOneIsRefused) {
  TempDir t;
  StateStore s(t.path() + "/a/state");
  ASSERT_TRUE(s.Acquire().ok());
  ASSERT_TRUE(s.Save(Rec("c1")).ok());
  for (std::string d : {"/a/state", "/a/state/attachments", "/a/state/attachments/rdma"}) {
    struct stat st {};
    ASSERT_EQ(lstat((t.path() + d).c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
  }
  // A state dir that is a symlink (to where someone else wants us to write) is not used.
  ASSERT_EQ(mkdir((t.path() + "/elsewhere").c_str(), 0700), 0);
  ASSERT_EQ(symlink((t.path() + "/elsewhere").c_str(), (t.path() + "/linked").c_str()), 0);
  StateStore linked(t.path() + "/linked");
  auto lock = linked.Acquire();
  EXPECT_EQ(lock.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(lock.status().message().find("symlink"), std::string::npos) << lock.status().message();
  EXPECT_FALSE(linked.Save(Rec("c1")).ok());
  EXPECT_TRUE(Entries(t.path() + "/elsewhere").empty());
  // One that another user owns.
  ASSERT_EQ(mkdir((t.path() + "/theirs").c_str(), 0700), 0);
  ASSERT_EQ(chown((t.path() + "/theirs").c_str(), 4242, 4242), 0);
  StateStore theirs(t.path() + "/theirs");
  auto their_lock = theirs.Acquire();
  EXPECT_EQ(their_lock.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(their_lock.status().message().find("4242"), std::string::npos) << their_lock.status().message();
  EXPECT_TRUE(Entries(t.path() + "/theirs").empty());
}

TEST(StateStoreTest, ACorruptQosSettingsFileIsQuarantinedSoDelsGoOn) {
  TempDir t;
  std::vector<std::string> reported;
  StateStore s(t.path(), [&](const std::string& m) { reported.push_back(m); });
  ASSERT_TRUE(testing::WriteFile(t.path() + "/knobs.json", "{\"tos:mlx5_1:1\": 7"));
  auto k = s.LoadQosOriginals();
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_TRUE(k->empty());
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_NE(reported[0].find("knobs.json"), std::string::npos) << reported[0];
  EXPECT_EQ(Entries(t.path() + "/quarantine").size(), 1u);
}

TEST(StateStoreTest, WriteLeavesNoTempFiles) {
  TempDir t;
  StateStore s(t.path());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s.Save(Rec("c1")).ok());
  DIR* d = opendir((t.path() + "/attachments/rdma").c_str());
  ASSERT_NE(d, nullptr);
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') {
      ++n;
      EXPECT_STREQ(e->d_name, "c1:net1.json");
    }
  }
  closedir(d);
  EXPECT_EQ(n, 1);
}

TEST(StateStoreTest, QosSettingsRoundTrip) {
  TempDir t;
  StateStore s(t.path());
  EXPECT_TRUE(s.LoadQosOriginals()->empty());
  ASSERT_TRUE(s.SaveQosOriginals({{"tos:mlx5_1:1", {"0", "106", ""}}, {"tc:mlx5_1:1", {"0", "96", "3"}}}).ok());
  auto k = s.LoadQosOriginals();
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->at("tos:mlx5_1:1").original, "0");
  EXPECT_EQ(k->at("tos:mlx5_1:1").applied, "106");
  EXPECT_EQ(k->at("tos:mlx5_1:1").left_as, "");
  EXPECT_EQ(k->at("tc:mlx5_1:1").left_as, "3");
  // knobs.json of an older release: id -> original.
  ASSERT_TRUE(testing::WriteFile(t.path() + "/knobs.json", R"({"pfc:pf0:3":"off"})"));
  k = s.LoadQosOriginals();
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->at("pfc:pf0:3").original, "off");
  EXPECT_EQ(k->at("pfc:pf0:3").applied, "");
}

TEST(StateStoreTest, LockSerialisesReadModifyWriteAcrossThreads) {
  TempDir t;
  StateStore s(t.path());
  ASSERT_TRUE(s.SaveQosOriginals({{"n", {"0", "", ""}}}).ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 20; ++k) {
        StateStore mine(t.path());
        auto lock = mine.Acquire();
        ASSERT_TRUE(lock.ok());
        auto knobs = mine.LoadQosOriginals();
        ASSERT_TRUE(knobs.ok());
        (*knobs)["n"].original = std::to_string(std::stoi((*knobs)["n"].original) + 1);
        ASSERT_TRUE(mine.SaveQosOriginals(*knobs).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(s.LoadQosOriginals()->at("n").original, "320");
}

// knobs.json and records are read by releases old and new: this one writes the bytes an
// earlier one wrote (tests/fixtures/cni_state/v0.1), not merely something it can read back.
TEST(StateStoreTest, KnobsJsonAndRecordsAreWrittenInTheBytesOfEarlierReleases) {
  const std::string old = std::string(RDMAK8S_FIXTURES_DIR) + "/cni_state/v0.1";
  TempDir tmp;
  ASSERT_EQ(system(("cp -r " + old + " " + tmp.path() + "/old").c_str()), 0);
  StateStore from(tmp.path() + "/old");
  StateStore to(tmp.path() + "/new");
  auto originals = from.LoadQosOriginals();
  ASSERT_TRUE(originals.ok()) << originals.status().ToString();
  ASSERT_EQ(originals->size(), 7u);
  ASSERT_TRUE(to.SaveQosOriginals(*originals).ok());
  EXPECT_EQ(testing::ReadFile(tmp.path() + "/new/knobs.json"), testing::ReadFile(old + "/knobs.json"));
  auto rec = from.Load("rdma", "c1", "net1");
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->qos_settings.at("pfc:pf0:3"), "on");
  ASSERT_TRUE(to.Save(*rec).ok());
  EXPECT_EQ(testing::ReadFile(tmp.path() + "/new/attachments/rdma/c1:net1.json"),
            testing::ReadFile(old + "/attachments/rdma/c1:net1.json"));
}

}  // namespace
}  // namespace rdmak8s::cni
