// A crash at every step of the CNI (issue 13 item 2). The plugin variant with cni/crash_point.h's
// hooks compiled in (world_plugin) is killed with SIGKILL right after each write it makes in ADD,
// DEL and GC; then what a runtime runs next (DEL; ADD again then DEL; GC with no attachment
// valid) must leave the node as before the ADD (device home, knobs back, no record, no saved
// original), or as after a completed ADD when the runtime re-ADDs. The steps come from the code:
// a clean run lists every crash point it passes, so a new hooked write is tested without a
// change here. Real network namespaces and veth; the world directory stands in for the RDMA
// hardware (RoCE rxe-shaped sysfs, ECN, default_roce_tos and traffic_class knobs).
#include <gtest/gtest.h>
#include <signal.h>

#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <memory>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni_world.h"
#include "support/temp_dir.h"
#include "support/throwaway_netns.h"

namespace rdmak8s::testing {
namespace {

using nlohmann::json;

const char* const kPodIp = "10.99.0.10";

class CniCrashTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto node = NewThrowawayNetns();
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(*node);
    auto pod = NewThrowawayNetns();
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    pod_ = std::move(*pod);
    ASSERT_TRUE(ShIn(pod_, std::string("ip link add net1 type veth peer name peer0 && ") +
                               "sysctl -w net.ipv6.conf.net1.disable_ipv6=1 && ip addr add " + kPodIp +
                               "/24 dev net1 && ip link set peer0 up && ip link set net1 up").ok());
    world_ = std::make_unique<CniWorld>(tmp_.path() + "/world", KeyOfNetns(node_));
    ASSERT_TRUE(world_->Build(1, /*shared=*/GetParam(), {kPodIp}));
  }

  static std::string KeyOfNetns(const Netns& ns) {
    struct stat st {};
    if (fstat(ns.fd(), &st) != 0) return "";
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }

  // One invocation; `crash_at` empty: none; `list`: the file crash points are listed in.
  ExecResult Run(const std::string& cmd, const std::string& crash_at = "", const std::string& list = "") {
    json conf = {{"cniVersion", "1.1.0"}, {"name", "rdma"}, {"type", "rdmak8s"}, {"deviceID", "rxe0"},
                 {"gidTimeoutMs", 2000},
                 {"qos", {{"ecn", {3}}, {"roceTos", 106}, {"trafficClass", 106}}}};
    if (cmd == "ADD") {
      conf["prevResult"] = {{"cniVersion", "1.1.0"},
                            {"interfaces", {{{"name", "net1"}, {"sandbox", pod_.path()}}}},
                            {"ips", {{{"address", std::string(kPodIp) + "/24"}, {"interface", 0}}}}};
    }
    if (cmd == "GC") conf["cni.dev/valid-attachments"] = json::array();
    std::vector<std::string> env = {"CNI_COMMAND=" + cmd, "CNI_PATH=/opt/cni/bin",
                                    "RDMAK8S_TEST_WORLD=" + world_->dir()};
    if (cmd != "GC") {
      env.insert(env.end(), {"CNI_CONTAINERID=c1", "CNI_NETNS=" + pod_.path(), "CNI_IFNAME=net1"});
    }
    if (!crash_at.empty()) env.push_back("RDMAK8S_CRASH_AT=" + crash_at);
    if (!list.empty()) env.push_back("RDMAK8S_CRASH_LIST=" + list);
    return ExecIn(node_, {RDMAK8S_WORLD_PLUGIN}, env, conf.dump());
  }

  // The crash points `cmd` passes, as "<name>@<n>", in order (after ADD when cmd is DEL or GC).
  std::vector<std::string> Points(const std::string& cmd) {
    const std::string list = tmp_.path() + "/points." + cmd;
    if (cmd != "ADD") {
      EXPECT_EQ(Run("ADD").exit_code, 0);
    }
    ExecResult r = Run(cmd, "", list);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::vector<std::string> out;
    std::map<std::string, int> seen;
    std::ifstream f(list);
    for (std::string name; std::getline(f, name);) out.push_back(name + "@" + std::to_string(++seen[name]));
    if (cmd == "ADD") {
      EXPECT_EQ(Run("DEL").exit_code, 0);
    }
    std::printf("%s crash points: %s\n", cmd.c_str(), ::testing::PrintToString(out).c_str());
    return out;
  }

  Netns node_, pod_;
  TempDir tmp_;
  std::unique_ptr<CniWorld> world_;
};

TEST_P(CniCrashTest, EveryCrashPointOfAddDelAndGcIsRecoveredByWhatTheRuntimeRunsNext) {
  const NodeState before = world_->State();
  ASSERT_EQ(before.records, 0u);
  ExecResult added = Run("ADD");
  ASSERT_EQ(added.exit_code, 0) << added.out;
  const NodeState after_add = world_->State();
  ASSERT_EQ(after_add.records, 1u);
  ASSERT_NE(after_add.knobs, before.knobs) << "the ADD changed the knobs";
  ASSERT_EQ(Run("DEL").exit_code, 0);
  ASSERT_EQ(world_->State(), before);

  const auto add_points = Points("ADD");
  const auto del_points = Points("DEL");
  const auto gc_points = Points("GC");
  ASSERT_EQ(world_->State(), before);
  ASSERT_FALSE(add_points.empty());
  ASSERT_FALSE(del_points.empty());
  ASSERT_FALSE(gc_points.empty());

  int injected = 0, recovered = 0;
  // Runs `crash` (which must die), then `next` (each expected to succeed), then checks the node.
  auto scenario = [&](const std::vector<std::string>& setup, const std::string& cmd, const std::string& at,
                      const std::vector<std::string>& next) {
    SCOPED_TRACE(cmd + " killed at " + at + ", then " + ::testing::PrintToString(next));
    for (const auto& s : setup) ASSERT_EQ(Run(s).exit_code, 0);
    ExecResult dead = Run(cmd, at);
    ++injected;
    ASSERT_EQ(dead.signal, SIGKILL) << "did not die at " << at << ": " << dead.out;
    bool ok = true;
    for (size_t i = 0; i < next.size(); ++i) {
      ExecResult r = Run(next[i]);
      EXPECT_EQ(r.exit_code, 0) << next[i] << ": " << r.out;
      ok = ok && r.exit_code == 0;
      if (next[i] == "ADD") {
        EXPECT_EQ(world_->State(), after_add) << "a re-ADD leaves the node as a completed ADD";
        ok = ok && world_->State() == after_add;
      }
    }
    const NodeState now = world_->State();
    EXPECT_EQ(now, before) << "the node is as before the ADD";
    if (ok && now == before) ++recovered;
  };
  for (const auto& at : add_points) {
    scenario({}, "ADD", at, {"DEL"});
    scenario({}, "ADD", at, {"ADD", "DEL"});
    scenario({}, "ADD", at, {"GC"});
  }
  for (const auto& at : del_points) {
    scenario({"ADD"}, "DEL", at, {"DEL"});
    scenario({"ADD"}, "DEL", at, {"GC"});
  }
  for (const auto& at : gc_points) {
    scenario({"ADD"}, "GC", at, {"GC"});
    scenario({"ADD"}, "GC", at, {"DEL"});
  }
  std::printf("FIGURE cni crash points (%s mode): %zu steps (ADD %zu, DEL %zu, GC %zu), %d crashes injected, "
              "%d recovered\n", GetParam() ? "shared" : "exclusive",
              add_points.size() + del_points.size() + gc_points.size(), add_points.size(), del_points.size(),
              gc_points.size(), injected, recovered);
  EXPECT_EQ(recovered, injected);
}

INSTANTIATE_TEST_SUITE_P(Modes, CniCrashTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Shared" : "Exclusive"; });

}  // namespace
}  // namespace rdmak8s::testing
