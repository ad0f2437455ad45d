// rdmak8s-inspect check as a process: flags, exit codes, JSON on stdout. This host has no RDMA
// netlink or DCB on the fixture's netdevs, so a fixture node always has something failing.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>
#include "support/test_dirs.h"

namespace {

struct Ran {
  int rc = -1;
  std::string out;
};

Ran RunInspect(const std::string& args) {
  const std::string cmd =
      std::string(RDMAK8S_BINARY_DIR) + "/inspect/rdmak8s-inspect " + args + " 2>/dev/null";
  Ran r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kFixture = std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_ib_2port";

TEST(InspectCheckBinaryTest, FailingNodeExitsOneWithJsonNamingTheDownPort) {
  Ran r = RunInspect("check --json --sysfs-root " + kFixture + " --proc-root /nonexistent");
  EXPECT_EQ(r.rc, 1);
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["passed"], false);
  bool down = false;
  for (const auto& c : j["checks"]) {
    down |= c["subject"] == "mlx5_0 port 2" && c["check"] == "port state" && c["result"] == "fail";
  }
  EXPECT_TRUE(down) << r.out;
}

TEST(InspectCheckBinaryTest, TableNamesFixes) {
  Ran r = RunInspect("check --sysfs-root " + kFixture);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("✘ mlx5_0 port 2  subnet manager"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    fix: start a subnet manager"), std::string::npos) << r.out;
}

TEST(InspectCheckBinaryTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunInspect("check --no-such-flag").rc, 2);
  EXPECT_EQ(RunInspect("check --sysfs-root " + kFixture + " --qos '{\"trust\":\"both\"}'").rc, 2);
  EXPECT_EQ(RunInspect("check --config /nonexistent/config.json").rc, 2);
  EXPECT_EQ(RunInspect("check --hugepages lots").rc, 2);
}

TEST(InspectCheckBinaryTest, HelpExitsZero) {
  Ran r = RunInspect("check --help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("--qos"), std::string::npos);
}

}  // namespace
