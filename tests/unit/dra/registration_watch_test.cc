// RegistrationWatch on a real directory with real inotify: what touches our socket's name wakes
// the driver, what touches other names does not.
#include "dra/registration_watch.h"

#include <poll.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
constexpr int kWaitMs = 10000;

bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

class RegistrationWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() + "/reg";
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/d-reg.sock") << "";
    ASSERT_TRUE(watch_.Start(dir_, "d-reg.sock").ok());
  }
  testing::TempDir tmp_;
  std::string dir_;
  RegistrationWatch watch_;
};

TEST_F(RegistrationWatchTest, RemovingOurSocketWakesTheWatch) {
  fs::remove(dir_ + "/d-reg.sock");
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  EXPECT_TRUE(watch_.Drain());
  EXPECT_FALSE(watch_.Drain()) << "drained: nothing new";
}

TEST_F(RegistrationWatchTest, ReplacingOurSocketByRenameWakesTheWatch) {
  std::ofstream(dir_ + "/other") << "";
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  EXPECT_FALSE(watch_.Drain()) << "another name is not ours";
  fs::rename(dir_ + "/other", dir_ + "/d-reg.sock");
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  EXPECT_TRUE(watch_.Drain());
}

TEST_F(RegistrationWatchTest, ARemovedDirectoryIsWatchedAgainOnceItIsBack) {
  fs::remove_all(dir_);
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  EXPECT_TRUE(watch_.Drain());
  EXPECT_FALSE(watch_.watching());
  fs::create_directories(dir_);
  watch_.Drain();  // the caller's timer tick: re-adds the watch
  EXPECT_TRUE(watch_.watching());
  std::ofstream(dir_ + "/d-reg.sock") << "";
  ASSERT_TRUE(Readable(watch_.fd(), kWaitMs));
  EXPECT_TRUE(watch_.Drain());
}

TEST(RegistrationWatchStartTest, AMissingDirectoryIsAnErrorNamingIt) {
  RegistrationWatch w;
  Status s = w.Start("/nonexistent/registry", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/registry"), std::string::npos);
}

}  // namespace
}  // namespace rdmak8s::dra
