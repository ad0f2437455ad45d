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
#include "rdmak8s/command_line.h"
#include "rdmak8s/path_flag.h"
#include "rdmak8s/rdma_netlink.h"

namespace {

int RealMain(int argc, char** argv) {
  using namespace rdmak8s;
  dp::DaemonOptions opts;
  std::string registration = "auto";
  // Loopback unless told: /metrics is unauthenticated, and with hostNetwork 0.0.0.0 would open
  // it on every address of the node. The DaemonSet binds the node's IP (status.hostIP), where
  // kubelet's probes and Prometheus reach it.
  std::string metrics_address = "127.0.0.1:9470";
  node::DeviceWatchFlags watch_flags;  // --rescan-interval, --port-poll-interval, --no-verbs
  int verbosity = 0;
  CLI::App app{"rdmak8s-device-plugin: advertises RDMA devices (InfiniBand HCAs, RoCE and iWARP "
               "NICs) to kubelet as <prefix>/<pool> resources. See docs/device-plugin.md."};
  app.set_version_flag("--version", "rdmak8s-device-plugin " RDMAK8S_VERSION);
  app.add_option("--config", opts.config_path,
                 "pool configuration (JSON); without it one shared pool \"shared\" takes every "
                 "device. Reloaded on change and on SIGHUP (which also rescans the devices)")
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--kubelet-dir", opts.kubelet_dir, "kubelet device-plugins directory")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--plugins-registry-dir", opts.plugins_registry_dir,
                 "kubelet plugin-watcher directory")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--registration", registration,
                 "auto | device-plugin (Register on kubelet.sock) | plugin-watcher "
                 "(socket in plugins_registry)")
      ->capture_default_str();
  app.add_option("--sysfs-root", opts.sysfs_root, "where sysfs is mounted")->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--dev-root", opts.dev_root,
                 "where the host's /dev is mounted (host paths in Allocate; container paths stay "
                 "/dev/infiniband/...)")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_flag("--cdi", opts.cdi, "answer Allocate with CDI device names and keep CDI specs");
  app.add_option("--cdi-dir", opts.cdi_dir, "where the CDI spec files go")->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--metrics-address", metrics_address,
                 "host:port for /metrics, /livez and /readyz (\"[<IPv6>]:port\" too); empty "
                 "disables")
      ->capture_default_str();
  opts.nfd_features_dir = dp::kNfdFeaturesDir;
  app.add_option("--nfd-features-dir", opts.nfd_features_dir,
                 "node-feature-discovery's features.d: the plugin keeps its feature file "
                 "(rdmak8s) there while it advertises devices; empty disables")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  app.add_option("--node-check-results", opts.node_check_results,
                 "the JSON of the last `rdmak8s-inspect check --json`, for the check metrics and "
                 "the lossless-ready node feature; empty: none")
      ->capture_default_str()
      ->transform(rdmak8s::AbsolutePath());
  node::AddDeviceWatchFlags(app, watch_flags);
  app.add_option("-v,--v", verbosity, "log verbosity: 0 info, 1 debug, 2 trace")
      ->capture_default_str();
  if (std::optional<int> rc = ParseCommandLine(app, argc, argv)) return *rc;

  auto mode = dp::ParseRegistrationMode(registration);
  if (!mode.ok()) {
    std::cerr << mode.status().message() << "\n";
    return 2;
  }
  opts.registration = *mode;
  const node::DeviceWatchOptions watch_opts =
      node::DeviceWatchOptionsFrom(watch_flags, opts.sysfs_root);
  opts.rescan_interval = watch_opts.rescan_interval;
  opts.port_poll_interval = watch_opts.port_poll_interval;
  opts.handle_signals = true;

  node::UseKlogStderrLogger(verbosity);

  // Signals go to the daemon's signalfd: block them before any thread (gRPC, exposer) starts.
  if (Status s = node::BlockStopSignals(); !s.ok()) {
    SPDLOG_ERROR("{}", s.message());
    return 1;
  }

  dp::Metrics metrics(opts.sysfs_root);
  dp::IoctlEthtoolStats ethtool;
  metrics.SetFabricSources(&ethtool, opts.node_check_results);
  // A taken address does not stop the plugin: node/listen_retry.h says why.
  std::unique_ptr<node::ListenRetry> metrics_listen;
  if (!metrics_address.empty()) {
    auto listen = node::ListenRetry::Start([&] { return metrics.Serve(metrics_address); });
    if (!listen.ok()) {
      SPDLOG_ERROR("{}", listen.status().message());
      return 1;
    }
    metrics_listen = std::move(*listen);
  }

  dp::DaemonDeps deps;
  deps.sources = node::BuildDeviceSources(watch_flags, opts.sysfs_root);
  deps.netns_mode = []() -> StatusOr<RdmaNetnsMode> {
    RDMAK8S_ASSIGN_OR_RETURN(auto nl, NewRdmaNetlink());
    return nl->GetNetnsMode();
  };
  deps.metrics = &metrics;

  dp::Daemon daemon(opts, std::move(deps));
  Status s = daemon.Start();
  if (!s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }
  s = daemon.Run();
  if (!s.ok()) {
    SPDLOG_ERROR("{}", s.message());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return rdmak8s::node::RunGuarded("rdmak8s-device-plugin", RealMain, argc, argv);
}
