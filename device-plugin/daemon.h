// Daemon: the device plugin's event loop. Owns the configuration, the known devices and one
// PoolServer per pool; reacts to
//   - the kubelet dir's watch (node/socket_dir_watch.h): kubelet.sock (re)created -> re-create
//     our sockets if kubelet removed them and register again; our socket deleted (a kubelet
//     starting, rm, another process) -> serve again at once and register again if kubelet.sock
//     is there; an inotify overflow, or the directory removed or back -> every pool's socket and
//     kubelet.sock looked at again;
//   - inotify on the config file's directory (also ConfigMap "..data" symlink swaps) and SIGHUP
//     -> reload; an invalid file is logged and the running config kept; SIGHUP then rescans;
//   - the node's devices (node/device_watch.h, the device watch the DRA driver runs too): rtnetlink
//     link events, kernel uevents, verbs async events, a light poll of every present device's
//     port state (every port_poll_interval) and a slow periodic rescan (the safety net; SIGHUP
//     forces one); every change it reports is published to the pools;
//   - retries of failed registrations and of a socket that could not be served again;
//   - results of Register calls, which run on a KubeletRegistrar thread so that a kubelet.sock
//     nobody answers on never stalls this loop;
//   - SIGTERM/SIGINT (or Stop()) -> stop servers, remove our sockets, return from Run().
// Every change kubelet should see is published to the pool's ListAndWatch streams at once.
//
// The daemon owns the fds (epoll, the config's inotify, the socket directory's watch, the
// signalfd, its wakeup eventfd; the device watch's sources are the watch's) and the pools, and
// dispatches; each reaction is a file of its own: kubelet/pool_registration.h (serving again,
// the registration state machine and its backoff; the Register call and the registration modes
// in kubelet/register_call.h), config_watcher.h (the config file,
// its watch and the diff a reload applies), pool_publisher.h (from tracked devices to what each
// pool publishes: IDs, ListAndWatch, CDI specs, pool metrics), node/device_watch.h (the devices,
// their events and their health).
//
// Thread safety: Start() and Run() on one thread; Stop(), Reload(), Rescan() and the accessors
// from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device-plugin/config/config.h"
#include "device-plugin/config/config_watcher.h"
#include "device-plugin/kubelet/plugin_server.h"
#include "device-plugin/kubelet/pool_registration.h"  // RegistrationMode, ParseRegistrationMode
#include "device-plugin/metrics/metrics.h"
#include "device-plugin/pools/pool_publisher.h"
#include "device-plugin/pools/pool_state.h"
#include "node/device_watch.h"
#include "node/socket_dir_watch.h"
#include "node/stop_signals.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/rdma_netlink.h"

namespace rdmak8s::dp {


struct DaemonOptions {
  std::string config_path;
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string plugins_registry_dir = "/var/lib/kubelet/plugins_registry";
  RegistrationMode registration = RegistrationMode::kAuto;
  std::string sysfs_root = "/sys";
  std::string dev_root = "/dev";
  bool cdi = false;
  std::string cdi_dir = "/var/run/cdi";
  // The device watch's periods (node::DeviceWatchOptions).
  std::chrono::seconds rescan_interval{300};
  // Period of the port-state poll; 0 turns it off.
  std::chrono::milliseconds port_poll_interval{2000};
  // NFD's features.d for the feature file (nfd_features.h; "": none) and the node check's
  // results file (node_check_results.h; "": none).
  std::string nfd_features_dir;
  std::string node_check_results;
  std::chrono::milliseconds register_timeout{5000};
  // Take SIGTERM, SIGINT and SIGHUP through a signalfd (node/stop_signals.h). The caller must
  // have blocked them in every thread (main does, node::BlockStopSignals, before any thread).
  bool handle_signals = false;
};

struct DaemonDeps {
  // The device watch's: discovery (required) and the event sources (optional).
  node::DeviceSources sources;
  // The node's RDMA netns mode, asked for exclusive pools. Null: reported as unknown.
  std::function<StatusOr<RdmaNetnsMode>()> netns_mode;
  Metrics* metrics = nullptr;                        // optional, not owned
  // Every pool server's ServerHooks::before_rename (tests: a kubelet's sweep in that window).
  std::function<void(const std::string& staging_path)> before_socket_rename;
};

class Daemon {
 public:
  Daemon(DaemonOptions options, DaemonDeps deps);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Loads the config (an invalid one is an error here), discovers, serves every pool, then
  // registers where kubelet is up. Sets up the watches.
  Status Start();
  // The event loop; returns after Stop() or SIGTERM/SIGINT, with every socket removed.
  Status Run();

  void Stop();
  void Reload();
  void Rescan();

  RegistrationMode registration_mode() const { return mode_; }
  // Resource names currently served.
  std::vector<std::string> Resources() const;
  // Socket of a resource ("" when not served).
  std::string SocketPath(const std::string& resource) const;
  // Current configuration.
  PluginConfig config() const;
  // Number of config reloads rejected so far.
  int rejected_reloads() const { return rejected_reloads_.load(); }

 private:
  // A running pool: its settings and its server. What it published is the publisher's
  // (publisher_), its registration the kubelet link's (registrations_), both by pool name.
  struct Pool {
    PoolConfig cfg;
    std::string resource;
    std::unique_ptr<PoolServer> server;
  };

  Status StartPool(const PoolConfig& cfg);
  void StopPool(const std::string& name, bool remove_cdi);
  // Starts serving a pool StartPool added, then registers it.
  Status ServePool(const std::string& name);
  // The device watch's "devices changed".
  void DevicesChanged(bool rescanned);
  void RebuildPools();
  void ApplyConfig(PluginConfig cfg);
  void DoReload();
  void HandleInotify();
  void HandleSocketDir();
  void HandleSignal();

  DaemonOptions options_;
  const bool has_discovery_;
  DaemonDeps deps_;
  RegistrationMode mode_ = RegistrationMode::kDevicePlugin;

  PluginConfig config_;
  ConfigWatcher config_watch_;                  // the --config file and its watch
  node::DeviceWatch watch_;                     // the devices, their events and health
  PoolPublisher publisher_;                     // tracked devices -> each pool's published state
  std::unique_ptr<PoolRegistrations> registrations_;           // serving and registration (after Start)
  mutable std::mutex pools_mu_;                 // guards pools_ map shape for the accessors
  std::map<std::string, Pool> pools_;           // pool name -> pool

  int epfd_ = -1;
  int inotify_fd_ = -1;
  int wake_fd_ = -1;
  node::SocketDirWatch socket_watch_;          // kubelet.sock and our sockets in socket_dir()
  std::optional<node::StopSignals> signals_;   // with handle_signals
  std::atomic<bool> stop_{false};
  std::atomic<bool> reload_{false};
  std::atomic<bool> rescan_{false};
  std::atomic<int> rejected_reloads_{0};
};

}  // namespace rdmak8s::dp
