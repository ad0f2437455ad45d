// rdmak8s-device-plugin: flags -> DaemonOptions -> wiring. Everything else is in the library.

#include <cstdio>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "device-plugin/daemon.h"
#include "device-plugin/metrics/ethtool_stats.h"
#include "device-plugin/metrics/metrics.h"
#include "device-plugin/nfd_features.h"
#include "node/device_watch_setup.h"
#include "node/listen_retry.h"
#include "node/program_main.h"
#include "node/stop_signals.h"
#include "rdmak8s/base/command_line.h"
#include "rdmak8s/base/path_flag.h"
#include "rdmak8s/netlink/rdma_netlink.h"

namespace {

using namespace rdmak8s;

// What the command line says, before it becomes options.
struct Flags {
  dp::DaemonOptions opts;
  std::string registration = "auto";
  // Loopback unless told: /metrics is unauthenticated, and with hostNetwork 0.0.0.0 would open
  // it on every address of the node. The DaemonSet binds the node's IP (status.hostIP), where
  // kubelet's probes and Prometheus reach it.
  std::string metrics_address = "127.0.0.1:9470";
  node::DeviceWatchFlags watch;  // --rescan-interval, --port-poll-interval, --no-verbs
  int verbosity = 0;
};

// The flags, in the order --help and --print-flags list them (docs/device-plugin.md's table).
void AddFlags(CLI::App& app, Flags& f) {
  app.set_version_flag("--version", "rdmak8s-device-plugin " RDMAK8S_VERSION);
  app.add_option("--config", f.opts.config_path,
                 "pool configuration (JSON); without it one shared pool \"shared\" takes every "
                 "device. Reloaded on change and on SIGHUP (which also rescans the devices)")
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--kubelet-dir", f.opts.kubelet_dir, "kubelet device-plugins directory")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--plugins-registry-dir", f.opts.plugins_registry_dir,
                 "kubelet plugin-watcher directory")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--registration", f.registration,
                 "auto | device-plugin (Register on kubelet.sock) | plugin-watcher "
                 "(socket in plugins_registry)")
      ->capture_default_str();
  app.add_option("--sysfs-root", f.opts.sysfs_root, "where sysfs is mounted")->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--dev-root", f.opts.dev_root,
                 "where the host's /dev is mounted (host paths in Allocate; container paths stay "
                 "/dev/infiniband/...)")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_flag("--cdi", f.opts.cdi, "answer Allocate with CDI device names and keep CDI specs");
  app.add_option("--cdi-dir", f.opts.cdi_dir, "where the CDI spec files go")->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--metrics-address", f.metrics_address,
                 "host:port for /metrics, /livez and /readyz (\"[<IPv6>]:port\" too); empty "
                 "disables")
      ->capture_default_str();
  f.opts.nfd_features_dir = dp::kNfdFeaturesDir;
  app.add_option("--nfd-features-dir", f.opts.nfd_features_dir,
                 "node-feature-discovery's features.d: the plugin keeps its feature file "
                 "(rdmak8s) there while it advertises devices; empty disables")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--node-check-results", f.opts.node_check_results,
                 "the JSON of the last `rdmak8s-inspect check --json`, for the check metrics and "
                 "the lossless-ready node feature; empty: none")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  node::AddDeviceWatchFlags(app, f.watch);
  app.add_option("-v,--v", f.verbosity, "log verbosity: 0 info, 1 debug, 2 trace")
      ->capture_default_str();
}

// The daemon's options from the parsed flags; InvalidArgument for an unknown --registration.
StatusOr<dp::DaemonOptions> BuildOptions(const Flags& f) {
  dp::DaemonOptions opts = f.opts;
  RDMAK8S_ASSIGN_OR_RETURN(opts.registration, dp::ParseRegistrationMode(f.registration));
  const node::DeviceWatchOptions watch = node::DeviceWatchOptionsFrom(f.watch, opts.sysfs_root);
  opts.rescan_interval = watch.rescan_interval;
  opts.port_poll_interval = watch.port_poll_interval;
  opts.handle_signals = true;
  return opts;
}

// /metrics, /livez and /readyz on `address`, retried while the address is taken (a taken
// address does not stop the plugin: node/listen_retry.h says why). Null when `address` is empty.
StatusOr<std::unique_ptr<node::ListenRetry>> ServeMetrics(dp::Metrics& metrics,
                                                          const std::string& address) {
  if (address.empty()) return std::unique_ptr<node::ListenRetry>();
  return node::ListenRetry::Start([&metrics, address] { return metrics.Serve(address); });
}

// The daemon's sources: the node's devices and event sources, the RDMA netns mode, the metrics.
dp::DaemonDeps BuildDeps(const Flags& f, const dp::DaemonOptions& opts, dp::Metrics* metrics) {
  dp::DaemonDeps deps;
  deps.sources = node::BuildDeviceSources(f.watch, opts.sysfs_root);
  deps.netns_mode = []() -> StatusOr<RdmaNetnsMode> {
    RDMAK8S_ASSIGN_OR_RETURN(auto nl, NewRdmaNetlink());
    return nl->GetNetnsMode();
  };
  deps.metrics = metrics;
  return deps;
}

// Starts the daemon and runs it until a stop signal: the exit code.
int RunDaemon(const dp::DaemonOptions& opts, dp::DaemonDeps deps) {
  dp::Daemon daemon(opts, std::move(deps));
  if (Status s = daemon.Start(); !s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }
  if (Status s = daemon.Run(); !s.ok()) {
    SPDLOG_ERROR("{}", s.message());
    return 1;
  }
  return 0;
}

int RealMain(int argc, char** argv) {
  Flags flags;
  CLI::App app{"rdmak8s-device-plugin: advertises RDMA devices (InfiniBand HCAs, RoCE and iWARP "
               "NICs) to kubelet as <prefix>/<pool> resources. See docs/device-plugin.md."};
  AddFlags(app, flags);
  if (std::optional<int> rc = ParseCommandLine(app, argc, argv)) return *rc;
  StatusOr<dp::DaemonOptions> opts = BuildOptions(flags);
  if (!opts.ok()) {
    std::cerr << opts.status().message() << "\n";
    return 2;
  }

  node::UseKlogStderrLogger(flags.verbosity);

  // Signals go to the daemon's signalfd: block them before any thread (gRPC, exposer) starts.
  if (Status s = node::BlockStopSignals(); !s.ok()) {
    SPDLOG_ERROR("{}", s.message());
    return 1;
  }

  dp::Metrics metrics(opts->sysfs_root);
  dp::IoctlEthtoolStats ethtool;
  metrics.SetFabricSources(&ethtool, opts->node_check_results);
  StatusOr<std::unique_ptr<node::ListenRetry>> metrics_listen =
      ServeMetrics(metrics, flags.metrics_address);
  if (!metrics_listen.ok()) {
    SPDLOG_ERROR("{}", metrics_listen.status().message());
    return 1;
  }
  return RunDaemon(*opts, BuildDeps(flags, *opts, &metrics));
}

}  // namespace

int main(int argc, char** argv) {
  return rdmak8s::node::RunGuarded("rdmak8s-device-plugin", RealMain, argc, argv);
}
