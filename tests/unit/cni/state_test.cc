#include "cni/state.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <thread>

#include "cni_test_util.h"

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
  r.knobs = {{"pfc:ens1f0np0:3", "on"}};
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
  EXPECT_EQ(r->knobs.at("pfc:ens1f0np0:3"), "on");
  auto all = s.List();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
  ASSERT_TRUE(s.Remove("rdma", "c1", "net1").ok());
  ASSERT_TRUE(s.Remove("rdma", "c1", "net1").ok()) << "removing twice is fine";
  EXPECT_EQ(s.Load("rdma", "c1", "net1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.List()->size(), 1u);
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

TEST(StateStoreTest, CorruptRecordIsAnErrorNamingTheFile) {
  TempDir t;
  StateStore s(t.path());
  ASSERT_TRUE(s.Save(Rec("c1")).ok());
  ASSERT_TRUE(testing::WriteFile(t.path() + "/attachments/rdma/c1:net1.json", "{trunc"));
  auto all = s.List();
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("c1:net1.json"), std::string::npos);
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

TEST(StateStoreTest, KnobsRoundTrip) {
  TempDir t;
  StateStore s(t.path());
  EXPECT_TRUE(s.LoadKnobs()->empty());
  ASSERT_TRUE(s.SaveKnobs({{"tos:mlx5_1:1", "0"}}).ok());
  EXPECT_EQ(s.LoadKnobs()->at("tos:mlx5_1:1"), "0");
}

TEST(StateStoreTest, LockSerialisesReadModifyWriteAcrossThreads) {
  TempDir t;
  StateStore s(t.path());
  ASSERT_TRUE(s.SaveKnobs({{"n", "0"}}).ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 20; ++k) {
        StateStore mine(t.path());
        auto lock = mine.Acquire();
        ASSERT_TRUE(lock.ok());
        auto knobs = mine.LoadKnobs();
        ASSERT_TRUE(knobs.ok());
        (*knobs)["n"] = std::to_string(std::stoi((*knobs)["n"]) + 1);
        ASSERT_TRUE(mine.SaveKnobs(*knobs).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(s.LoadKnobs()->at("n"), "320");
}

}  // namespace
}  // namespace rdmak8s::cni
