// SocketDirWatch on a real directory with real inotify: what touches the names asked for wakes
// the agent, what touches other names does not, and the directory going and coming back is an
// event (moved here from tests/unit/dra/registration_watch_test.cc with the watch).
#include "node/socket_dir_watch.h"

#include <poll.h>
#include <sys/inotify.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s::node {
namespace {

namespace fs = std::filesystem;
constexpr int kWaitMs = 10000;

bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

// Drains until the watch has reported what `done` wants, for up to kWaitMs of quiet: inotify may
// deliver one change in more than one read.
SocketDirWatch::Changes DrainUntil(SocketDirWatch& w,
                                   const std::function<bool(const SocketDirWatch::Changes&)>& done) {
  SocketDirWatch::Changes all;
  while (!done(all) && Readable(w.fd(), kWaitMs)) {
    SocketDirWatch::Changes c = w.Drain();
    all.recheck_all = all.recheck_all || c.recheck_all;
    all.events.insert(all.events.end(), c.events.begin(), c.events.end());
  }
  return all;
}

class SocketDirWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() + "/reg";
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/d-reg.sock") << "";
    ASSERT_TRUE(watch_.Start(dir_, "d-reg.sock").ok());
  }
  testing::TempDir tmp_;
  std::string dir_;
  SocketDirWatch watch_;
};

TEST_F(SocketDirWatchTest, RemovingOurSocketWakesTheWatch) {
  fs::remove(dir_ + "/d-reg.sock");
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  SocketDirWatch::Changes c = watch_.Drain();
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].name, "d-reg.sock");
  EXPECT_EQ(c.events[0].mask, static_cast<uint32_t>(IN_DELETE));
  EXPECT_FALSE(c.recheck_all);
  EXPECT_FALSE(watch_.Drain().any()) << "drained: nothing new";
}

TEST_F(SocketDirWatchTest, ReplacingOurSocketByRenameWakesTheWatch) {
  std::ofstream(dir_ + "/other") << "";
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  EXPECT_FALSE(watch_.Drain().any()) << "another name is not ours";
  fs::rename(dir_ + "/other", dir_ + "/d-reg.sock");
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  SocketDirWatch::Changes c = watch_.Drain();
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].mask, static_cast<uint32_t>(IN_MOVED_TO));
}

// kubelet's root removed and made again (a node reset, a hostPath re-created): the directory's
// return wakes the watch by itself, no timer, and the watch follows the new directory.
TEST_F(SocketDirWatchTest, ARemovedDirectoryIsWatchedAgainWhenItComesBackWithoutATimer) {
  fs::remove_all(dir_);
  SocketDirWatch::Changes gone =
      DrainUntil(watch_, [&](const SocketDirWatch::Changes& c) { return c.recheck_all; });
  EXPECT_TRUE(gone.recheck_all);
  EXPECT_FALSE(watch_.watching_dir());
  EXPECT_TRUE(watch_.watching()) << "the parent still tells the directory's return";
  fs::create_directories(dir_);
  SocketDirWatch::Changes back =
      DrainUntil(watch_, [&](const SocketDirWatch::Changes&) { return watch_.watching_dir(); });
  EXPECT_TRUE(watch_.watching_dir()) << "the directory's creation re-added its watch";
  EXPECT_TRUE(back.recheck_all) << "what is in the new directory must be looked at";
  std::ofstream(dir_ + "/d-reg.sock") << "";
  SocketDirWatch::Changes created =
      DrainUntil(watch_, [](const SocketDirWatch::Changes& c) { return !c.events.empty(); });
  ASSERT_EQ(created.events.size(), 1u);
  EXPECT_EQ(created.events[0].name, "d-reg.sock");
}

TEST_F(SocketDirWatchTest, ADirectoryRenamedAwayIsNoLongerReportedAndItsSuccessorIs) {
  fs::rename(dir_, tmp_.path() + "/old");
  DrainUntil(watch_, [](const SocketDirWatch::Changes& c) { return c.recheck_all; });
  EXPECT_FALSE(watch_.watching_dir());
  fs::remove(tmp_.path() + "/old/d-reg.sock");
  fs::create_directories(dir_);
  DrainUntil(watch_, [&](const SocketDirWatch::Changes&) { return watch_.watching_dir(); });
  ASSERT_TRUE(watch_.watching_dir());
  std::ofstream(dir_ + "/d-reg.sock") << "";
  SocketDirWatch::Changes c =
      DrainUntil(watch_, [](const SocketDirWatch::Changes& c) { return !c.events.empty(); });
  ASSERT_EQ(c.events.size(), 1u) << "only the new directory's socket, not the old one's removal";
  EXPECT_EQ(c.events[0].mask, static_cast<uint32_t>(IN_CREATE));
}

TEST_F(SocketDirWatchTest, AFilterPicksTheNamesReported) {
  SocketDirWatch w;
  ASSERT_TRUE(w.Start(dir_, [](const std::string& n) { return n == "a.sock" || n == "b.sock"; })
                  .ok());
  std::ofstream(dir_ + "/a.sock") << "";
  std::ofstream(dir_ + "/c.sock") << "";
  std::ofstream(dir_ + "/b.sock") << "";
  SocketDirWatch::Changes c =
      DrainUntil(w, [](const SocketDirWatch::Changes& c) { return c.events.size() >= 2; });
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0].name, "a.sock");
  EXPECT_EQ(c.events[1].name, "b.sock");
}

TEST(SocketDirWatchStartTest, AMissingDirectoryIsAnErrorNamingIt) {
  SocketDirWatch w;
  Status s = w.Start("/nonexistent/registry", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/registry"), std::string::npos);
}

}  // namespace
}  // namespace rdmak8s::node
