// Device plugin soak (issue 13 item 4): the real rdmak8s-device-plugin binary over the rxe_veth
// fixture against the fake kubelet: kubelet restarts in both registration modes, plugin restarts
// by SIGTERM and SIGKILL, the config rewritten valid/invalid alternately; and 1,000 port flaps
// through the in-process daemon with fake link events. Each case waits on what
// kubelet observes (a registration, a ListAndWatch update) or on the plugin's log line, never a
// sleep, and prints the plugin's RSS and fd count at start and end; the fd count must not grow
// with the iterations (one leaked per restart fails). And 40 restarts of a kubelet slower than the
// plugin's Register deadline, with CPU burners beside them under make reliability: no double
// registration, no pool left at 0.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/fake_kubelet.h"
#include "support/spawn.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"
#include "unit/device-plugin/daemon_fixture.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Resp = v1beta1::ListAndWatchResponse;
constexpr auto kWait = 30s;

// Open fds and resident set (kB) of process `pid`.
struct Usage {
  int fds = 0;
  long rss_kb = 0;
};
Usage UsageOf(pid_t pid) {
  Usage u;
  const std::string proc = "/proc/" + std::to_string(pid);
  if (DIR* d = opendir((proc + "/fd").c_str())) {
    while (dirent* e = readdir(d)) u.fds += e->d_name[0] != '.';
    closedir(d);
  }
  std::ifstream status(proc + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) u.rss_kb = std::atol(line.c_str() + 6);
  }
  return u;
}

// A leak of one fd per iteration shows as `iterations` more: allow a few for gRPC's own pools
// and connections still closing.
constexpr int kFdSlack = 8;

// The usage of `pid` once its fd count is back within `slack` of `start` (connections of the
// last iteration still closing), or as it is after kWait: a leak never settles.
Usage Settled(pid_t pid, const Usage& start, int slack = kFdSlack) {
  Usage u = UsageOf(pid);
  for (auto deadline = std::chrono::steady_clock::now() + kWait;
       u.fds > start.fds + slack && std::chrono::steady_clock::now() < deadline; u = UsageOf(pid)) {
    std::this_thread::sleep_for(20ms);
  }
  return u;
}

void Figure(const char* name, int iterations, const Usage& start, const Usage& end) {
  std::printf("FIGURE dp soak %s: %d iterations, RSS %ld -> %ld kB, fds %d -> %d\n", name, iterations,
              start.rss_kb, end.rss_kb, start.fds, end.fds);
}

class DpSoakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(root_.empty());
    for (const char* d : {"/k", "/cfg", "/reg"}) fs::create_directories(root_ + d);
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/rxe_veth", root_ + "/sys",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    kubelet_ = std::make_unique<fake::FakeKubelet>(root_ + "/k");
    ASSERT_TRUE(kubelet_->Start().ok());
    WriteConfig(Config(2));
  }
  void TearDown() override {
    Kill(SIGKILL);
    kubelet_.reset();
    fs::remove_all(root_);
  }

  static std::string Config(int capacity) {
    return R"({"pools": [{"name": "soft", "capacity": )" + std::to_string(capacity) + R"(, "selectors": {}}]})";
  }
  // Atomically, as a ConfigMap update does (the watcher never sees half a file).
  void WriteConfig(const std::string& text) {
    std::ofstream(root_ + "/cfg/c.json.tmp") << text;
    fs::rename(root_ + "/cfg/c.json.tmp", root_ + "/cfg/c.json");
  }

  void Spawn(std::vector<std::string> extra = {}) {
    std::string bin = std::string(RDMAK8S_BINARY_DIR) + "/device-plugin/rdmak8s-device-plugin";
    std::vector<std::string> args = {bin, "--config", root_ + "/cfg/c.json", "--kubelet-dir", root_ + "/k",
                                     "--plugins-registry-dir", root_ + "/reg", "--sysfs-root", root_ + "/sys",
                                     "--metrics-address", "", "--no-verbs"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = testing::SpawnDaemon(args, {.stderr_path = root_ + "/stderr.log", .append_stderr = true});
    ASSERT_GE(pid_, 0);
  }
  // Sends `sig` and reaps the plugin; its wait status, or -1 when none ran.
  int Kill(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  bool Devices(size_t n) {
    return kubelet_->WaitForDevices("rdma/soft", [n](const Resp& r) { return r.devices_size() == static_cast<int>(n); },
                                    kWait).has_value();
  }
  // Lines of the plugin's log holding `what`.
  int LogLines(const std::string& what) {
    std::ifstream in(root_ + "/stderr.log");
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
    return n;
  }
  // Streams kubelet saw opened and not closed (one per live registration).
  int OpenStreams() {
    int open = 0;
    for (const auto& e : kubelet_->Events()) {
      if (e == "stream rdma/soft open") ++open;
      if (e == "stream rdma/soft closed") --open;
    }
    return open;
  }

  std::string root_;
  std::unique_ptr<fake::FakeKubelet> kubelet_;
  pid_t pid_ = -1;
};


TEST_F(DpSoakTest, HundredKubeletRestartsWithRegisterOnKubeletSockLoseNoRegistration) {
  constexpr int kRestarts = 100;
  Spawn({"--registration", "device-plugin"});
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", 1, kWait));
  ASSERT_TRUE(Devices(2));
  const Usage start = UsageOf(pid_);
  for (int i = 1; i <= kRestarts; ++i) {
    ASSERT_TRUE(kubelet_->Restart().ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", static_cast<size_t>(i + 1), kWait)) << "restart " << i;
    ASSERT_TRUE(Devices(2)) << "restart " << i;
  }
  const Usage end = Settled(pid_, start);
  Figure("kubelet restarts (kubelet.sock Register)", kRestarts, start, end);
  EXPECT_LE(end.fds, start.fds + kFdSlack);
  EXPECT_LE(OpenStreams(), 1) << "no stream of an earlier kubelet left open";
}

TEST_F(DpSoakTest, HundredKubeletRestartsWithThePluginWatcherLoseNoRegistration) {
  constexpr int kRestarts = 100;
  Spawn({"--registration", "plugin-watcher"});
  const std::string sock = root_ + "/reg/rdmak8s-rdma-soft.sock";
  auto registered = [&] {
    for (auto deadline = std::chrono::steady_clock::now() + kWait; std::chrono::steady_clock::now() < deadline;) {
      if (fs::exists(sock) && kubelet_->RegisterViaPluginWatcher(sock).ok()) return true;
      std::this_thread::sleep_for(20ms);  // (the plugin starting up: poll for its socket)
    }
    return false;
  };
  ASSERT_TRUE(registered());
  ASSERT_TRUE(Devices(2));
  const Usage start = UsageOf(pid_);
  for (int i = 1; i <= kRestarts; ++i) {
    ASSERT_TRUE(kubelet_->Restart().ok());
    ASSERT_TRUE(fs::exists(sock)) << "kubelet's restart leaves the plugins_registry socket";
    ASSERT_TRUE(registered()) << "restart " << i;
    ASSERT_TRUE(Devices(2)) << "restart " << i;
  }
  const Usage end = Settled(pid_, start);
  Figure("kubelet restarts (plugin watcher)", kRestarts, start, end);
  EXPECT_LE(end.fds, start.fds + kFdSlack);
  EXPECT_LE(OpenStreams(), 1);
}

TEST_F(DpSoakTest, TwentyPluginRestartsBySigtermAndSigkillEachRegisterAgain) {
  constexpr int kRestarts = 20;
  Usage first, last;
  const Usage kubelet_start = UsageOf(getpid());
  for (int i = 0; i <= kRestarts; ++i) {
    Spawn({"--registration", "device-plugin"});
    ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", static_cast<size_t>(i + 1), kWait)) << "start " << i;
    ASSERT_TRUE(Devices(2)) << "start " << i;
    (i == 0 ? first : last) = UsageOf(pid_);
    if (i == kRestarts) break;
    const int sig = i % 2 == 0 ? SIGTERM : SIGKILL;
    int status = Kill(sig);
    if (sig == SIGTERM) {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "clean exit on SIGTERM";
    }
  }
  const Usage kubelet_side = Settled(getpid(), kubelet_start);
  Figure("plugin restarts (SIGTERM/SIGKILL), plugin", kRestarts, first, last);
  Figure("plugin restarts (SIGTERM/SIGKILL), fake kubelet", kRestarts, kubelet_start, kubelet_side);
  EXPECT_LE(kubelet_side.fds, kubelet_start.fds + kFdSlack) << "kubelet's side closed each dead plugin's connection";
  EXPECT_LE(last.fds, first.fds + kFdSlack);
  EXPECT_LE(OpenStreams(), 1) << "the streams of the dead plugins were closed";
}

TEST_F(DpSoakTest, HundredConfigRewritesValidAndInvalidAlternatelyKeepTheLastValid) {
  constexpr int kRewrites = 100;
  Spawn({"--registration", "device-plugin"});
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/soft", 1, kWait));
  ASSERT_TRUE(Devices(2));
  const Usage start = UsageOf(pid_);
  size_t capacity = 2;
  for (int i = 0; i < kRewrites; ++i) {
    if (i % 2 == 0) {
      capacity = 1 + static_cast<size_t>(i / 2) % 3;  // 1, 2, 3, 1, ...: each differs from the last
      if (capacity == 2 && i == 0) capacity = 3;
      WriteConfig(Config(static_cast<int>(capacity)));
      ASSERT_TRUE(Devices(capacity)) << "valid rewrite " << i << " advertises " << capacity;
    } else {
      const int rejected = LogLines("reload rejected");
      WriteConfig(R"({"pools": [{"name": "soft", "capacity": "many"}]})");
      bool seen = false;
      for (auto deadline = std::chrono::steady_clock::now() + kWait;
           !seen && std::chrono::steady_clock::now() < deadline;) {
        seen = LogLines("reload rejected") > rejected;
        if (!seen) std::this_thread::sleep_for(10ms);  // (polling the log for the rejection)
      }
      ASSERT_TRUE(seen) << "invalid rewrite " << i << " was rejected";
      auto latest = kubelet_->LatestDevices("rdma/soft");
      ASSERT_TRUE(latest.has_value());
      EXPECT_EQ(latest->devices_size(), static_cast<int>(capacity)) << "the last valid config stays";
    }
  }
  const Usage end = Settled(pid_, start);
  Figure("config rewrites (valid/invalid)", kRewrites, start, end);
  EXPECT_EQ(kubelet_->Registrations().size(), 1u) << "a capacity change is an update, no new registration";
  EXPECT_LE(end.fds, start.fds + kFdSlack);
  EXPECT_LE(OpenStreams(), 1);
}

// The daemon in this process (daemon_fixture.h): the real discovery over a copy of rxe_veth, the
// fake kubelet, fake link events. Each flap is veth0 down then up, as the kernel reports it
// (operstate, then the link event).
using DpPortFlapSoakTest = daemon_test::DaemonTest;

TEST_F(DpPortFlapSoakTest, ThousandPortFlapsEachReachListAndWatchAndNoneIsLost) {
  constexpr int kFlaps = 1000;
  // Health transitions of rxe0 on kubelet's ListAndWatch, counted as they arrive. Shared: the
  // stream thread may still deliver while the fixture tears down.
  struct Seen {
    std::mutex mu;
    std::string last;
    int downs = 0;
    int ups = 0;
  };
  auto seen = std::make_shared<Seen>();
  kubelet_->SetUpdateCallback([seen](const std::string& resource, const Resp& r) {
    if (resource != "rdma/p") return;
    const std::string health = daemon_test::HealthOf(r, "rxe0");
    std::lock_guard<std::mutex> lock(seen->mu);
    if (health == seen->last) return;
    if (health == "Unhealthy") ++seen->downs;
    if (health == "Healthy" && seen->last == "Unhealthy") ++seen->ups;
    seen->last = health;
  });
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  auto health_is = [](const char* want) {
    return [want](const Resp& r) { return daemon_test::HealthOf(r, "rxe0") == want; };
  };
  ASSERT_TRUE(WaitFor("rdma/p", health_is("Healthy")));
  const Usage start = UsageOf(getpid());
  for (int i = 1; i <= kFlaps; ++i) {
    WriteFile(sys("class/net/veth0/operstate"), "down\n");
    links_->Inject("veth0", false);
    ASSERT_TRUE(WaitFor("rdma/p", health_is("Unhealthy"))) << "flap " << i << " down";
    WriteFile(sys("class/net/veth0/operstate"), "up\n");
    links_->Inject("veth0", true);
    ASSERT_TRUE(WaitFor("rdma/p", health_is("Healthy"))) << "flap " << i << " up";
  }
  const Usage end = Settled(getpid(), start);
  Figure("port flaps (in-process daemon)", kFlaps, start, end);
  EXPECT_LE(end.fds, start.fds + kFdSlack);
  std::lock_guard<std::mutex> lock(seen->mu);
  EXPECT_EQ(seen->downs, kFlaps) << "every flap's Unhealthy reached ListAndWatch";
  EXPECT_EQ(seen->ups, kFlaps) << "every flap's Healthy reached ListAndWatch";
}

// CPU burners beside a soak (make reliability sets RDMAK8S_SOAK_CPU_BURNERS; make test does not):
// that many threads spinning until the soak ends them, or 10 minutes at most. Bounded: at most 8.
class CpuBurners {
 public:
  CpuBurners() {
    const char* env = std::getenv("RDMAK8S_SOAK_CPU_BURNERS");
    const int n = env == nullptr ? 0 : std::clamp(std::atoi(env), 0, 8);
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(10);
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, until] {
        volatile uint64_t x = 0;
        while (!stop_.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until) {
          for (int j = 0; j < 100000; ++j) x = x + static_cast<uint64_t>(j);
        }
      });
    }
  }
  ~CpuBurners() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  int count() const { return static_cast<int>(threads_.size()); }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// kubelet v1.36.2 under CPU burners took up to 16 s from its start to every pool full, and its
// dial-back inside Register outlasted the plugin's deadline: twice a Register was sent again one
// deadline away from a double registration. Here the kubelet is restarted again and again, slower
// than the plugin's Register deadline on three restarts in four (in its dial-back, its reply, or
// both), sometimes down past the plugin's stream wait first; with CPU burners beside it under
// make reliability. No Register may reach a kubelet twice for one pool, and no pool may be left
// at 0.
class DpSlowKubeletSoakTest : public daemon_test::DaemonTest {
 protected:
  // Register results the daemon's loop took as accepted for `resource` (its metrics).
  uint64_t AcceptedByLoop(const std::string& resource) {
    const std::string key = "rdmak8s_registrations_total{resource=\"" + resource + "\",result=\"ok\"} ";
    const std::string text = metrics_->Scrape();
    const size_t at = text.find(key);
    return at == std::string::npos ? 0 : std::strtoull(text.c_str() + at + key.size(), nullptr, 10);
  }
  // True once the loop took one more Register of `resource` as accepted than `before`. Polled:
  // the metrics have no wait.
  bool WaitAcceptedByLoop(const std::string& resource, uint64_t before) {
    for (auto until = std::chrono::steady_clock::now() + daemon_test::kStreamLost;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(5ms)) {
      if (AcceptedByLoop(resource) > before) return true;
    }
    return false;
  }
};

TEST_F(DpSlowKubeletSoakTest, SlowKubeletRestartsBesideCpuBurnersRegisterEachPoolOnceAndLeaveNoneAtZero) {
  constexpr int kRestarts = 40;
  constexpr int kDownEvery = 10;  // down past the stream wait before this restart
  const std::vector<std::string> pools = {"rdma/vfs", "rdma/pf"};
  CpuBurners burners;
  UseFixture("mlx5_roce_sriov");
  WriteConfig(daemon_test::kSriovConfig);
  register_timeout_ = 400ms;
  ASSERT_TRUE(StartDaemon().ok());
  for (const auto& res : pools) ASSERT_TRUE(kubelet_->WaitForHealthy(res, 2, {}, daemon_test::kWait)) << res;
  int at_zero = 0;
  std::vector<int64_t> full_ms;
  for (int i = 1; i <= kRestarts; ++i) {
    static constexpr std::pair<int, int> kDelaysMs[] = {{0, 0}, {700, 0}, {0, 700}, {300, 300}};
    const auto [dial_back, reply] = kDelaysMs[i % 4];
    if (i % kDownEvery == 0) {
      kubelet_->Stop();
      // The plugin gives the dead kubelet up: by the stream wait running out while no kubelet
      // listens (or, when it was still taking in the last restart, by a Register refused).
      bool given_up = false;
      for (auto until = std::chrono::steady_clock::now() + daemon_test::kStreamLost;
           !given_up && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(20ms)) {
        given_up = metrics_->Unready().find("not registered with kubelet: rdma/pf, rdma/vfs") != std::string::npos;
      }
      EXPECT_TRUE(given_up) << "restart " << i << ": " << metrics_->Unready();
    }
    kubelet_->SetRegisterDelays(std::chrono::milliseconds(dial_back), std::chrono::milliseconds(reply));
    std::map<std::string, size_t> accepted;
    for (const auto& e : kubelet_->Events()) accepted[e]++;
    std::map<std::string, uint64_t> loop_accepted;
    for (const auto& res : pools) loop_accepted[res] = AcceptedByLoop(res);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(kubelet_->Restart().ok());
    for (const auto& res : pools) {
      // This kubelet's registration, then its stream full (the last kubelet's update is gone then).
      if (!kubelet_->WaitForRegistrations(res, accepted["register " + res + " ok"] + 1, daemon_test::kStreamLost) ||
          !kubelet_->WaitForHealthy(res, 2, {}, daemon_test::kStreamLost)) {
        ++at_zero;
        ADD_FAILURE() << res << " at 0 after restart " << i;
      }
    }
    full_ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    // The plugin's side settled too (a Register sent again would have reached kubelet by then).
    for (const auto& res : pools) {
      EXPECT_TRUE(WaitAcceptedByLoop(res, loop_accepted[res])) << res << " restart " << i << ": " << metrics_->Unready();
    }
  }
  size_t doubles = 0;
  for (const auto& res : pools) doubles += kubelet_->DoubleRegistrations(res);
  std::sort(full_ms.begin(), full_ms.end());
  std::printf("FIGURE dp soak slow kubelet restarts beside %d CPU burners: %d restarts, double registrations "
              "%zu, pools at 0 %d, kubelet start -> all pools full median %lld ms, max %lld ms\n",
              burners.count(), kRestarts, doubles, at_zero, static_cast<long long>(full_ms[full_ms.size() / 2]),
              static_cast<long long>(full_ms.back()));
  EXPECT_EQ(doubles, 0u);
  EXPECT_EQ(at_zero, 0);
  for (const auto& e : kubelet_->Events()) EXPECT_EQ(e.find("disconnect"), std::string::npos) << e;
}

}  // namespace
}  // namespace rdmak8s::dp
