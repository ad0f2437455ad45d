// The daemon's integration fixture, shared by the daemon_*_test.cc files (one per room the
// daemon dispatches to): the fake kubelet drives the real daemon over unix-socket gRPC, with the
// real SysfsDiscovery reading a copy of a fixture tree (modified in place for health flips and
// hot-plug), real inotify and fake link / verbs event sources.
#pragma once

#include "device-plugin/daemon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device-plugin/pools/pool_cdi_spec.h"
#include "node/cdi_spec.h"
#include "node/uevent.h"
#include "support/fake_kubelet.h"
#include "support/log_capture.h"
#include "support/loopback_http.h"
#include "support/sysfs_builder.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"
#include "unit/device-plugin/fake_event_sources.h"
#include "unit/device-plugin/node_sysfs.h"

// Test files take these with `using namespace daemon_test;`.
namespace rdmak8s::dp::daemon_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace std::string_literals;
using fake::FakeKubelet;
using Resp = v1beta1::ListAndWatchResponse;

inline constexpr auto kWait = 10s;
// A pool whose stream kubelet ended registers again after PoolRegistrations's stream wait (5 s), its
// stream end seen within a second: bound for that, on a loaded machine.
inline constexpr auto kStreamLost = 30s;

inline std::vector<std::string> Ids(const Resp& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices()) out.push_back(d.id());
  return out;
}

inline std::string HealthOf(const Resp& r, const std::string& id) {
  for (const auto& d : r.devices()) {
    if (d.id() == id) return d.health();
  }
  return "absent";
}


using testing::LogCapture;
// The real discovery, counting what the daemon asks of it (thread safe: the test reads the counts
// while the daemon's loop runs).
class CountingDiscovery : public Discovery {
 public:
  explicit CountingDiscovery(std::unique_ptr<Discovery> real) : real_(std::move(real)) {}
  StatusOr<DiscoveryResult> DiscoverAll() override {
    ++all_;
    return real_->DiscoverAll();
  }
  StatusOr<RdmaDevice> DiscoverOne(std::string_view rdma_dev) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      one_.emplace_back(rdma_dev);
    }
    return real_->DiscoverOne(rdma_dev);
  }
  int all() const { return all_.load(); }
  std::vector<std::string> one() const {
    std::lock_guard<std::mutex> lock(mu_);
    return one_;
  }

 private:
  std::unique_ptr<Discovery> real_;
  std::atomic<int> all_{0};
  mutable std::mutex mu_;
  std::vector<std::string> one_;
};

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(root_.empty());
    kubelet_dir_ = root_ + "/k";
    fs::create_directories(kubelet_dir_);
    fs::create_directories(root_ + "/cfg");
    kubelet_ = std::make_unique<FakeKubelet>(kubelet_dir_);
    metrics_ = std::make_unique<Metrics>(root_ + "/sys");
    // Off unless a test turns it on: the other tests count what each event makes the daemon read.
    options_.port_poll_interval = 0ms;
  }

  void TearDown() override {
    StopDaemon();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  void UseFixture(const std::string& name) {
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name, root_ + "/sys",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }

  // Replaces the config file atomically (as kubectl cp / an editor's rename would).
  void WriteConfig(const std::string& json) {
    WriteFile(root_ + "/cfg/.tmp", json);
    fs::rename(root_ + "/cfg/.tmp", config_path());
  }

  std::string config_path() const { return root_ + "/cfg/config.json"; }
  std::string sys(const std::string& rel) const { return root_ + "/sys/" + rel; }
  // Changes a file the running daemon reads (an attribute, the node check's results) whole, as
  // the kernel shows an attribute and the node check writes its file.
  void WriteFile(const std::string& path, const std::string& content) {
    Status s = rdmak8s::testing::WriteWhole(root_, path, content);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  Status StartDaemon(bool start_kubelet = true) {
    if (start_kubelet) RDMAK8S_RETURN_IF_ERROR(kubelet_->Start());
    options_.config_path = config_path();
    options_.kubelet_dir = kubelet_dir_;
    options_.plugins_registry_dir = root_ + "/registry";
    options_.sysfs_root = root_ + "/sys";
    options_.dev_root = "/host/dev";
    options_.cdi_dir = root_ + "/cdi";
    options_.register_timeout = register_timeout_;
    DaemonDeps deps;
    auto discovery = std::make_unique<CountingDiscovery>(
        std::make_unique<SysfsDiscovery>(DiscoveryOptions{root_ + "/sys", nullptr}));
    discovery_ = discovery.get();
    deps.sources.discovery = std::move(discovery);
    deps.netns_mode = [this]() -> StatusOr<RdmaNetnsMode> { return netns_mode_.load(); };
    auto links = std::make_unique<FakeLinkMonitor>();
    links_ = links.get();
    deps.sources.links = std::move(links);
    auto events = std::make_unique<FakeDeviceEventSource>();
    events_ = events.get();
    deps.sources.async_events = std::move(events);
    if (uevent_fd_ >= 0) deps.sources.uevents = node::NewUeventSourceOnFd(std::exchange(uevent_fd_, -1));
    deps.metrics = metrics_.get();
    deps.before_socket_rename = before_socket_rename_;
    daemon_ = std::make_unique<Daemon>(options_, std::move(deps));
    RDMAK8S_RETURN_IF_ERROR(daemon_->Start());
    thread_ = std::thread([this] { run_status_ = daemon_->Run(); });
    return Status::Ok();
  }

  void StopDaemon() {
    if (!daemon_) return;
    daemon_->Stop();
    if (thread_.joinable()) thread_.join();
    daemon_.reset();
  }

  std::optional<Resp> WaitFor(const std::string& resource,
                              const std::function<bool(const Resp&)>& pred) {
    return kubelet_->WaitForDevices(resource, pred, kWait);
  }

  // The metrics text once it holds `needle`, or as it is after kWait. The daemon's loop records
  // what happened after the fake kubelet saw it (a Register is counted when its reply is back on
  // the loop), so a scrape right after a kubelet-side wait can be early.
  std::string ScrapeWhen(const std::string& needle) {
    std::string text = metrics_->Scrape();
    for (auto until = std::chrono::steady_clock::now() + kWait;
         text.find(needle) == std::string::npos && std::chrono::steady_clock::now() < until;
         text = metrics_->Scrape()) {
      std::this_thread::sleep_for(5ms);
    }
    return text;
  }

  // True once the daemon reports every pool registered and streaming (Metrics::Unready() empty)
  // before kWait: its loop has handled every Register result by then.
  bool WaitUntilReady(std::chrono::steady_clock::duration bound = kWait) {
    for (auto until = std::chrono::steady_clock::now() + bound; std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(5ms)) {
      if (metrics_->Unready().empty()) return true;
    }
    return false;
  }

  std::string root_;
  std::string kubelet_dir_;
  std::chrono::milliseconds register_timeout_ = 3000ms;
  int uevent_fd_ = -1;  // when set: the daemon's uevent source reads this socket
  std::function<void(const std::string&)> before_socket_rename_;
  std::unique_ptr<FakeKubelet> kubelet_;
  DaemonOptions options_;
  std::atomic<RdmaNetnsMode> netns_mode_{RdmaNetnsMode::kExclusive};
  FakeLinkMonitor* links_ = nullptr;
  FakeDeviceEventSource* events_ = nullptr;
  CountingDiscovery* discovery_ = nullptr;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<Daemon> daemon_;
  std::thread thread_;
  Status run_status_;
};

inline constexpr char kSriovConfig[] = R"({"pools": [
  {"name": "vfs", "mode": "exclusive", "selectors": {"isVF": true}},
  {"name": "pf", "mode": "shared", "capacity": 2, "selectors": {"vendors": ["15b3"]}}]})";

// One GET on the loopback; the whole response (status line, headers, body).
inline std::string HttpGet(int port, const std::string& path) { return testing::HttpRequest(port, path); }
using testing::Body;

}  // namespace rdmak8s::dp::daemon_test
