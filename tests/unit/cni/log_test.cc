#include "cni/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cni_test_util.h"

namespace rdmak8s::cni {
namespace {

TEST(LoggerTest, WritesAtOrAboveTheLevelToStderrAndTheFile) {
  testing::TempDir t;
  const std::string file = t.path() + "/cni.log";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  {
    Logger log;
    log.Configure(LogLevel::kWarning, file, fds[1]);
    log.SetContext("ADD net c1/net1");
    log.Info("not shown");
    log.Warning("shown warning");
    log.Error("shown error");
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  std::string err(buf, n > 0 ? static_cast<size_t>(n) : 0);
  std::string logged = testing::ReadFile(file);
  for (const std::string& s : {err, logged}) {
    EXPECT_EQ(s.find("not shown"), std::string::npos);
    EXPECT_NE(s.find("WARN rdmak8s["), std::string::npos) << s;
    EXPECT_NE(s.find("ADD net c1/net1: shown warning"), std::string::npos) << s;
    EXPECT_NE(s.find("ERROR"), std::string::npos);
  }
}

TEST(LoggerTest, UnwritableLogFileIsReportedOnStderrAndLoggingGoesOn) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  {
    Logger log;
    log.Configure(LogLevel::kInfo, "/nonexistent-dir/cni.log", fds[1]);
    log.Info("still here");
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  std::string err(buf, n > 0 ? static_cast<size_t>(n) : 0);
  EXPECT_NE(err.find("cannot open logFile /nonexistent-dir/cni.log: No such file or directory"),
            std::string::npos) << err;
  EXPECT_NE(err.find("still here"), std::string::npos);
}

TEST(LoggerTest, ControlCharactersFromInputCannotForgeALine) {
  testing::TempDir t;
  const std::string file = t.path() + "/cni.log";
  {
    Logger log;
    log.Configure(LogLevel::kInfo, file, -1);
    log.SetContext("ADD net c1\rX/net1");
    // A deviceID from a NAD, carrying a newline and a fake line after it.
    log.Info("device mlx5_0\n2026-01-01T00:00:00.000000Z ERROR rdmak8s[1]: forged\x1b[2J\t\x7f end");
  }
  const std::string logged = testing::ReadFile(file);
  EXPECT_EQ(std::count(logged.begin(), logged.end(), '\n'), 0) << "one line (ReadFile drops the last \\n)";
  for (char c : logged) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << logged;
  EXPECT_NE(logged.find("device mlx5_0\\n2026-01-01T00:00:00.000000Z ERROR rdmak8s[1]: forged\\x1b[2J\\t\\x7f end"),
            std::string::npos) << logged;
  EXPECT_NE(logged.find("ADD net c1\\rX/net1: "), std::string::npos) << logged;
}

TEST(LoggerTest, ConfiguringTheSameFileAgainKeepsItOpen) {
  testing::TempDir t;
  const std::string file = t.path() + "/cni.log";
  const std::string moved = t.path() + "/cni.log.1";
  Logger log;
  log.Configure(LogLevel::kInfo, file, -1);
  log.Info("first");
  // Renamed away: a reopen would create `file` again; the kept descriptor writes to `moved`.
  ASSERT_EQ(rename(file.c_str(), moved.c_str()), 0);
  log.Configure(LogLevel::kDebug, file, -1);
  log.Debug("second, at the new level");
  EXPECT_NE(testing::ReadFile(moved).find("second, at the new level"), std::string::npos);
  EXPECT_NE(access(file.c_str(), F_OK), 0) << "reopened";
  // Another path is opened, and the level applies to it.
  const std::string other = t.path() + "/other.log";
  log.Configure(LogLevel::kWarning, other, -1);
  log.Info("not shown");
  log.Warning("third");
  const std::string o = testing::ReadFile(other);
  EXPECT_NE(o.find("third"), std::string::npos) << o;
  EXPECT_EQ(o.find("not shown"), std::string::npos) << o;
}

}  // namespace
}  // namespace rdmak8s::cni
