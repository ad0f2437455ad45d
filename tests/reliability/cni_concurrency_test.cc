// Concurrency (issue 13 item 3): 16 chains ADD/CHECK/DEL at once, 5 rounds, each a real runtime
// (cni-driver over Debian's libcni) running macvlan + host-local, tuning, then rdmak8s (world_plugin,
// the plugin's wiring over a world directory standing in for RDMA hardware), in real network
// namespaces; then GC with no attachment valid. Two nodes' worth of devices:
//   exclusive world: 8 devices, one per chain, moved into the pods;
//   shared world:    2 devices, each shared by 4 chains;
// every attachment asks the same QoS (ECN on the one PF netdev: a node-wide knob all share; and
// each device's default_roce_tos), so the documented conflict rule (docs/cni.md, error 103:
// two live attachments needing one knob at two values) refuses nothing: every operation must
// succeed, and afterwards every record is gone, every knob back, every device home, no lease left.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni_world.h"
#include "support/temp_dir.h"
#include "support/throwaway_netns.h"

namespace rdmak8s::testing {
namespace {

using nlohmann::json;

constexpr int kChains = 16;
constexpr int kRounds = 5;
constexpr int kExclusiveChains = 8;  // chains 0..7: exclusive world; 8..15: shared world

std::string KeyOfNetns(const Netns& ns) {
  struct stat st {};
  if (fstat(ns.fd(), &st) != 0) return "";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

class CniConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/sys/class/infiniband", F_OK) == 0) GTEST_SKIP() << "this host has RDMA";
    auto node = NewThrowawayNetns();
    ASSERT_TRUE(node.ok());
    node_ = std::move(*node);
    ASSERT_TRUE(ShIn(node_, "ip link add m0 type veth peer name m1 && ip link set m0 up && ip link set m1 up").ok());
    for (int i = 0; i < kChains; ++i) {
      auto pod = NewThrowawayNetns();
      ASSERT_TRUE(pod.ok());
      pods_.push_back(std::move(*pod));
    }
    for (int i = 0; i < kChains; ++i) ips_.push_back("10.98.0." + std::to_string(10 + i));
    exclusive_ = std::make_unique<CniWorld>(tmp_.path() + "/x", KeyOfNetns(node_));
    shared_ = std::make_unique<CniWorld>(tmp_.path() + "/s", KeyOfNetns(node_));
    ASSERT_TRUE(exclusive_->Build(kExclusiveChains, false, ips_));
    ASSERT_TRUE(shared_->Build(2, true, ips_));
    for (int i = 0; i < kChains; ++i) {
      const std::string dev = i < kExclusiveChains ? "rxe" + std::to_string(i) : "rxe" + std::to_string(i % 2);
      WriteConflist(tmp_.path() + "/net" + std::to_string(i) + ".conflist", "1.0.0", dev);
    }
    WriteConflist(tmp_.path() + "/gc.conflist", "1.1.0", "rxe0");
  }

  void WriteConflist(const std::string& path, const std::string& version, const std::string& dev) {
    json list = {{"cniVersion", version}, {"name", "rdmanet"}, {"plugins", {
        {{"type", "macvlan"}, {"master", "m0"}, {"mode", "bridge"},
         {"ipam", {{"type", "host-local"}, {"dataDir", tmp_.path() + "/ipam"},
                   {"ranges", {{{{"subnet", "10.98.0.0/24"}, {"rangeStart", ips_.front()}, {"rangeEnd", ips_.back()}}}}}}}},
        // IPv4 only: the stand-in GID tables hold the GIDs of the range's IPv4 addresses.
        {{"type", "tuning"}, {"sysctl", {{"net.ipv6.conf.net1.disable_ipv6", "1"}}}},
        {{"type", "rdmak8s"}, {"deviceID", dev}, {"gidTimeoutMs", 5000},
         {"qos", {{"ecn", {3}}, {"roceTos", 106}}}}}}};
    std::ofstream(path) << list.dump(2);
  }

  // cni-driver from a thread in the node netns, with `world`'s plugin environment.
  ExecResult Drive(const CniWorld& world, const std::string& conflist, const std::string& args) {
    const std::string cmd = "RDMAK8S_TEST_WORLD=" + world.dir() + " " + RDMAK8S_CNI_DRIVER + " -conflist " +
                            conflist + " -plugin-dirs " + RDMAK8S_WORLD_PLUGIN_DIR + ":/usr/lib/cni -cache-dir " +
                            tmp_.path() + "/cache " + args + " 2>>" + tmp_.path() + "/driver.err";
    ExecResult r;
    (void)RunInNetns(node_, [&]() -> Status {
      FILE* p = popen(cmd.c_str(), "r");
      if (p == nullptr) return InternalError("popen");
      char buf[4096];
      for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
      int rc = pclose(p);
      r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
      return Status::Ok();
    });
    return r;
  }

  Netns node_;
  std::vector<Netns> pods_;
  std::vector<std::string> ips_;
  TempDir tmp_;
  std::unique_ptr<CniWorld> exclusive_, shared_;
};

TEST_F(CniConcurrencyTest, SixteenParallelChainsOverSharedAndExclusiveDevicesLoseAndLeakNothing) {
  const NodeState x_before = exclusive_->State(), s_before = shared_->State();
  std::atomic<int> ops{0}, failures{0};
  std::mutex mu;
  std::vector<std::string> failed;
  const auto t0 = std::chrono::steady_clock::now();
  // A last round ADDs and CHECKs only: GC must release those 16 (then their DELs find nothing).
  for (int round = 0; round <= kRounds; ++round) {
    std::vector<std::thread> chains;
    for (int i = 0; i < kChains; ++i) {
      chains.emplace_back([&, i, round] {
        const CniWorld& world = i < kExclusiveChains ? *exclusive_ : *shared_;
        const std::string args = " -netns " + pods_[static_cast<size_t>(i)].path() + " -id c" + std::to_string(i) +
                                 "r" + std::to_string(round) + " -ifname net1";
        const std::string conflist = tmp_.path() + "/net" + std::to_string(i) + ".conflist";
        const std::vector<std::string> cmds = round < kRounds ? std::vector<std::string>{"ADD", "CHECK", "DEL"}
                                                               : std::vector<std::string>{"ADD", "CHECK"};
        for (const std::string& cmd : cmds) {
          ExecResult r = Drive(world, conflist, std::string("-cmd ") + cmd + args);
          ++ops;
          if (r.exit_code != 0) {
            ++failures;
            std::lock_guard<std::mutex> l(mu);
            failed.push_back(cmd + args + ": " + r.out);
            if (cmd == "ADD") break;  // (the driver ran the DEL a runtime runs)
          }
        }
      });
    }
    for (auto& t : chains) t.join();
  }
  const NodeState x_live = exclusive_->State(), s_live = shared_->State();
  EXPECT_EQ(x_live.records + s_live.records, static_cast<size_t>(kChains)) << "the last round's attachments, for GC";
  for (const CniWorld* w : {exclusive_.get(), shared_.get()}) {
    ExecResult r = Drive(*w, tmp_.path() + "/gc.conflist", "-cmd GC");
    ++ops;
    if (r.exit_code != 0) {
      ++failures;
      failed.push_back("GC: " + r.out);
    }
  }
  for (int i = 0; i < kChains; ++i) {  // the runtime's late DEL: macvlan and the lease go
    ExecResult r = Drive(i < kExclusiveChains ? *exclusive_ : *shared_, tmp_.path() + "/net" + std::to_string(i) + ".conflist",
                         "-cmd DEL -netns " + pods_[static_cast<size_t>(i)].path() + " -id c" + std::to_string(i) +
                             "r" + std::to_string(kRounds) + " -ifname net1");
    ++ops;
    if (r.exit_code != 0) {
      ++failures;
      failed.push_back("late DEL: " + r.out);
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("FIGURE cni concurrency: %d chains x %d rounds ADD/CHECK/DEL, then ADD/CHECK, GC, DEL: %d operations, %d failures, "
              "wall %.1f s\n", kChains, kRounds, ops.load(), failures.load(), wall);
  for (const auto& f : failed) ADD_FAILURE() << f;
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(exclusive_->State(), x_before) << "exclusive world: devices home, knobs back, no record";
  EXPECT_EQ(shared_->State(), s_before) << "shared world: knobs back, no record";
  EXPECT_NE(std::system(("ls " + tmp_.path() + "/ipam/rdmanet/10.98.0.* >/dev/null 2>&1").c_str()), 0)
      << "host-local leases all released";
  for (const auto& pod : pods_) EXPECT_FALSE(ShIn(pod, "ip link show net1").ok()) << "macvlan removed";
}

}  // namespace
}  // namespace rdmak8s::testing
