// rdmak8s-dra-driver: flags -> options -> wiring. Everything else is in the library.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <cstdio>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "device-plugin/program_main.h"
#include "device-plugin/device_events.h"
#include "device-plugin/uevent.h"
#include "dra/claim_reader.h"
#include "dra/device_catalog.h"
#include "dra/health_watcher.h"
#include "dra/plugin.h"
#include "dra/preparer.h"
#include "rdmak8s/discovery.h"
#include "rdmak8s/route_netlink.h"
#include "rdmak8s/verbs.h"

namespace {

using namespace rdmak8s;

// The seam for the API server (dra/api/ provides the real ClaimReader): until it is wired,
// every claim fails to prepare with this, and kubelet keeps retrying.
class NoApiServerClaimReader final : public dra::ClaimReader {
 public:
  StatusOr<dra::ResourceClaim> GetClaim(const std::string& ns, const std::string& name) override {
    return UnavailableError("claim " + ns + "/" + name +
                            ": no API server connection configured in this build");
  }
};

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "node";
  return buf;
}

int RealMain(int argc, char** argv) {
  dra::PreparerOptions prep;
  dra::DraPluginOptions plugin_opts;
  std::string node_name = HostName();
  std::string sysfs_root = "/sys";
  int rescan_s = 300;
  int verbosity = 0;
  bool no_verbs = false;
  plugin_opts.registry_dir = "/var/lib/kubelet/plugins_registry";
  CLI::App app{"rdmak8s-dra-driver: prepares RDMA devices (InfiniBand HCAs, RoCE and iWARP NICs) "
               "allocated through Dynamic Resource Allocation, as kubelet's DRA plugin."};
  app.set_version_flag("--version", "rdmak8s-dra-driver " RDMAK8S_VERSION);
  app.add_option("--driver-name", prep.driver_name, "DRA driver name (DeviceClass selectors, "
                 "ResourceSlices, CDI vendor)")->capture_default_str();
  app.add_option("--node-name", node_name, "this node's name: the pool of its devices")
      ->capture_default_str();
  app.add_option("--plugins-registry-dir", plugin_opts.registry_dir,
                 "kubelet plugin-watcher directory")->capture_default_str();
  app.add_option("--plugin-dir", plugin_opts.plugin_dir,
                 "where dra.sock goes (default /var/lib/kubelet/plugins/<driver-name>)");
  app.add_option("--state-dir", prep.state_dir, "checkpoint of prepared claims")
      ->capture_default_str();
  app.add_option("--cdi-dir", prep.cdi_dir, "where per-claim CDI specs go")->capture_default_str();
  app.add_option("--pod-devices-dir", prep.pod_devices_dir,
                 "root-owned records of each pod's prepared devices, for the CNI")
      ->capture_default_str();
  app.add_option("--sysfs-root", sysfs_root, "where sysfs is mounted")->capture_default_str();
  app.add_option("--dev-root", prep.dev_root,
                 "where the host's /dev is mounted (CDI host paths; container paths stay "
                 "/dev/infiniband/...)")->capture_default_str();
  app.add_option("--rescan-interval", rescan_s, "seconds between safety-net full rescans")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  app.add_flag("--no-verbs", no_verbs, "do not open devices with libibverbs");
  app.add_option("-v,--v", verbosity, "log verbosity: 0 info, 1 debug, 2 trace")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  plugin_opts.driver_name = prep.driver_name;
  if (plugin_opts.plugin_dir.empty()) {
    plugin_opts.plugin_dir = "/var/lib/kubelet/plugins/" + prep.driver_name;
  }

  dp::UseKlogStderrLogger(verbosity);

  // Signals are taken by sigtimedwait below: block them before any thread starts.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<VerbsQuery> verbs;
  if (!no_verbs) verbs = NewIbverbsQuery();
  dra::HealthWatcherDeps deps;
  deps.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sysfs_root, verbs.get()});
  if (auto links = NewLinkMonitor(); links.ok()) {
    deps.links = std::move(links).value();
  } else {
    SPDLOG_WARN("link events unavailable ({}): health follows the periodic rescan",
                links.status().message());
  }
  if (auto uevents = dp::NewKernelUeventSource(); uevents.ok()) {
    deps.uevents = std::move(uevents).value();
  } else {
    SPDLOG_WARN("uevents unavailable ({})", uevents.status().message());
  }
  if (!no_verbs) {
    if (auto events = dp::NewIbverbsEventSource(); events.ok()) deps.async_events = std::move(events).value();
  }

  dra::DeviceCatalog catalog(node_name);
  dra::HealthWatcher watcher(std::move(deps), sysfs_root, &catalog, std::chrono::seconds(rescan_s));
  if (Status s = watcher.Start(); !s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }
  NoApiServerClaimReader reader;
  auto preparer = dra::Preparer::Create(prep, &reader, &catalog);
  if (!preparer.ok()) {
    SPDLOG_ERROR("start: {}", preparer.status().message());
    return 1;
  }
  dra::DraPlugin plugin(plugin_opts, preparer->get(), &catalog);
  if (Status s = plugin.Start(); !s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }

  Status run_status;
  std::thread watch([&] { run_status = watcher.Run(); });
  while (true) {
    timespec one_second{1, 0};
    int sig = sigtimedwait(&set, nullptr, &one_second);
    if (sig > 0) {
      SPDLOG_INFO("signal {}: shutting down", strsignal(sig));
      break;
    }
    if (auto again = plugin.ServeRegistrationAgain(); !again.ok()) {
      SPDLOG_ERROR("{}", again.status().message());
    }
  }
  plugin.Stop();
  watcher.Stop();
  watch.join();
  if (!run_status.ok()) {
    SPDLOG_ERROR("{}", run_status.message());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return rdmak8s::dp::RunGuarded("rdmak8s-dra-driver", RealMain, argc, argv);
}
