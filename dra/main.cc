// rdmak8s-dra-driver: flags -> options -> wiring. Everything else is in the libraries
// (rdmak8s_dra: the kubelet side; rdmak8s_dra_api: the API-server side).
#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "dra/api/claim_reader.h"
#include "dra/api/claim_status_writer.h"
#include "dra/api/claim_watch.h"
#include "dra/api/kube_client.h"
#include "dra/api/kube_config.h"
#include "dra/api/slice_publisher.h"
#include "dra/api/slice_sync.h"
#include "dra/claim_reader.h"
#include "dra/binding_conditions.h"
#include "dra/claim_status_reporter.h"
#include "dra/device_catalog.h"
#include "dra/health_watcher.h"
#include "dra/metrics.h"
#include "dra/plugin.h"
#include "dra/preparer.h"
#include "node/device_watch_setup.h"
#include "node/listen_retry.h"
#include "node/program_main.h"
#include "node/socket_dir_watch.h"
#include "node/stop_signals.h"
#include "rdmak8s/command_line.h"
#include "rdmak8s/path_flag.h"

namespace {

using namespace rdmak8s;

// --no-api-server only (development, tests of the kubelet side): every claim fails to prepare
// with this, and kubelet keeps retrying.
class NoApiServerClaimReader final : public dra::ClaimReader {
 public:
  StatusOr<dra::ResourceClaim> GetClaim(const std::string& ns, const std::string& name,
                                        dra::ClaimDeadline /*deadline*/) override {
    return UnavailableError("claim " + ns + "/" + name + ": started with --no-api-server");
  }
};

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "node";
  return buf;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The API server's connection: the kubeconfig when given, else in-cluster. The error says what
// is missing and how to proceed.
StatusOr<std::unique_ptr<dra::CurlKubeClient>> ConnectApi(const std::string& kubeconfig,
                                                          const std::string& service_account_dir) {
  StatusOr<dra::KubeConfig> config =
      kubeconfig.empty()
          ? dra::InClusterConfig(Env("KUBERNETES_SERVICE_HOST"), Env("KUBERNETES_SERVICE_PORT"),
                                 service_account_dir)
          : dra::LoadKubeconfig(kubeconfig);
  if (!config.ok()) {
    return config.status().Prepend(
        "no API server configuration (pass --kubeconfig, run in a pod with a service account, "
        "or --no-api-server to publish and prepare nothing)");
  }
  return dra::CurlKubeClient::Create(*std::move(config));
}

// --delete-slices-on-exit: a few attempts within a few seconds (the client retries nothing
// by now: StopRetries), so that an API server answering 503s cannot hold the exit up.
bool DeleteSlicesOnExit(dra::SlicePublisher& publisher, const std::string& driver,
                        const std::string& node) {
  constexpr int kAttempts = 3;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  Status s;
  int attempt = 1;
  for (;; ++attempt) {
    s = publisher.DeleteAll();
    if (s.ok()) {
      SPDLOG_INFO("deleted this node's ResourceSlices");
      return true;
    }
    if (attempt >= kAttempts || std::chrono::steady_clock::now() + std::chrono::seconds(1) > deadline) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  SPDLOG_ERROR("delete ResourceSlices on exit: gave up after {} attempt(s): {}; left on the "
               "server: the ResourceSlices of driver {} on node {} (kubectl delete resourceslices "
               "--field-selector spec.nodeName={},spec.driver={})",
               attempt, s.message(), driver, node, node, driver);
  return false;
}

// Until SIGTERM/SIGINT: serves the registration socket again whenever the registry directory
// says it may be gone (node/socket_dir_watch.h: our socket's name, an overflow, the directory
// gone or back); SIGHUP asks the health watcher for a full rescan. Wakes at least every 30 s, so
// /livez sees the loop alive.
void WaitForSignal(node::StopSignals& signals, dra::DraPlugin& plugin, node::SocketDirWatch& watch,
                   dra::HealthWatcher& health, dra::DraMetrics& metrics) {
  while (true) {
    metrics.Heartbeat("registration loop", std::chrono::minutes(2));
    std::array<pollfd, 2> fds{{{signals.fd(), POLLIN, 0}, {watch.fd(), POLLIN, 0}}};
    // The directory's return is an event while its parent is watched. Only with the parent gone
    // too (kubelet's root removed) can no event tell it: then look again each second.
    int r = ::poll(fds.data(), fds.size(), watch.watching() ? 30000 : 1000);
    if (r < 0 && errno != EINTR) {
      SPDLOG_ERROR("poll: {}", std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) {
      auto got = signals.Read();
      if (!got.ok()) {
        SPDLOG_ERROR("{}", got.status().message());
        return;
      }
      if (got->request == node::SignalRequest::kLookAgain) {
        SPDLOG_INFO("SIGHUP: rescanning the node's devices");
        health.RequestRescan();
      } else if (got->request == node::SignalRequest::kStop) {
        SPDLOG_INFO("signal {}: shutting down", got->name());
        return;
      }
    }
    // A timeout checks the socket too: the safety net under the events.
    const bool timed_out = r == 0;
    if (timed_out || fds[1].revents != 0) {
      if (!watch.Drain().any() && !timed_out) continue;
      if (auto again = plugin.ServeRegistrationAgain(); !again.ok()) {
        SPDLOG_ERROR("{}", again.status().message());
      }
    }
  }
}

int RealMain(int argc, char** argv) {
  dra::PreparerOptions prep;
  dra::DraPluginOptions plugin_opts;
  std::string node_name = HostName();
  std::string sysfs_root = "/sys";
  std::string kubeconfig;
  std::string service_account_dir = dra::kServiceAccountDir;
  node::DeviceWatchFlags watch_flags;  // --rescan-interval, --port-poll-interval, --no-verbs
  int shares = 0;
  int verbosity = 0;
  bool no_api_server = false;
  bool delete_slices_on_exit = false;
  // As the device plugin's: loopback unless told (the paths have no authentication); the
  // DaemonSet binds the node's IP. The same port: a node runs one agent or the other.
  std::string metrics_address = "127.0.0.1:9470";
  plugin_opts.registry_dir = "/var/lib/kubelet/plugins_registry";
  CLI::App app{"rdmak8s-dra-driver: prepares RDMA devices (InfiniBand HCAs, RoCE and iWARP NICs) "
               "allocated through Dynamic Resource Allocation, as kubelet's DRA plugin, and "
               "publishes them as this node's ResourceSlices."};
  app.set_version_flag("--version", "rdmak8s-dra-driver " RDMAK8S_VERSION);
  app.add_option("--driver-name", prep.driver_name, "DRA driver name (DeviceClass selectors, "
                 "ResourceSlices, CDI vendor)")->capture_default_str();
  app.add_option("--node-name", node_name, "this node's name: the pool of its devices")
      ->capture_default_str();
  app.add_option("--kubeconfig", kubeconfig,
                 "kubeconfig of the API server (development); default: in-cluster config "
                 "(KUBERNETES_SERVICE_HOST/PORT and the pod's service account)")
      ->transform(AbsolutePath());
  app.add_option("--service-account-dir", service_account_dir,
                 "in-cluster: where the service account's token and ca.crt are")
      ->capture_default_str()
      ->transform(AbsolutePath());
  auto* no_api = app.add_flag("--no-api-server", no_api_server,
                              "development and tests only: talk to no API server (publish no "
                              "ResourceSlices; every claim fails to prepare)");
  app.add_flag("--delete-slices-on-exit", delete_slices_on_exit,
               "on SIGTERM/SIGINT, delete this node's ResourceSlices of this driver before "
               "exiting: for uninstall (the scheduler stops offering the devices). Leave off "
               "for restarts and rolling updates, where the next instance takes the slices over")
      ->excludes(no_api);
  app.add_option("--shares", shares,
                 "0: exclusive, one DRA device per RDMA function. N > 0: shared, N allocations "
                 "per function: one device with consumable capacity where the server has it "
                 "(KEP-5075), else N devices \"<name>-<k>\" per function")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--plugins-registry-dir", plugin_opts.registry_dir,
                 "kubelet plugin-watcher directory")->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--plugin-dir", plugin_opts.plugin_dir,
                 "where dra.sock goes (default /var/lib/kubelet/plugins/<driver-name>)")
      ->transform(AbsolutePath());
  app.add_option("--state-dir", prep.state_dir, "checkpoint of prepared claims")
      ->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--cdi-dir", prep.cdi_dir, "where per-claim CDI specs go")->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--pod-devices-dir", prep.pod_devices_dir,
                 "root-owned records of each pod's prepared devices, for the CNI")
      ->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--sysfs-root", sysfs_root, "where sysfs is mounted")->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--dev-root", prep.dev_root,
                 "where the host's /dev is mounted (CDI host paths; container paths stay "
                 "/dev/infiniband/...)")->capture_default_str()
      ->transform(AbsolutePath());
  node::AddDeviceWatchFlags(app, watch_flags);
  std::string taint_effect = dra::kDefaultTaintEffect;
  app.add_option("--unhealthy-taint-effect", taint_effect,
                 "the effect of the taint on a device whose port is not usable: NoSchedule (new "
                 "claims skip it), NoExecute (pods using it are evicted too) or None "
                 "(informational)")
      ->capture_default_str()
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(dra::kTaintEffects),
                                                     std::end(dra::kTaintEffects))));
  int health_changes_per_minute = dra::HealthChangeLimit::Options{}.max_changes;
  app.add_option("--health-changes-per-minute", health_changes_per_minute,
                 "how often one device's published health may change within a minute; a "
                 "flapping port's later changes are published once the minute allows")
      ->capture_default_str()
      ->check(CLI::Range(1, 60));
  int binding_timeout_s = static_cast<int>(dra::BindingConditionOptions{}.timeout.count());
  app.add_option("--binding-timeout", binding_timeout_s,
                 "seconds an InfiniBand port the subnet manager has not brought up may hold a "
                 "pod at binding before the driver sets PortActivationFailed (the scheduler then "
                 "tries another device); under the scheduler's own bindingTimeout (600 s)")
      ->capture_default_str()
      ->check(CLI::Range(1, 590));
  std::string devices_file;
  app.add_option("--devices", devices_file,
                 "which RDMA devices this driver takes: a JSON file {\"selectors\": {...}} with "
                 "the device plugin's selector keys (default: every RDMA device of the node)")
      ->transform(AbsolutePath());
  app.add_option("--metrics-address", metrics_address,
                 "host:port for /metrics, /livez and /readyz (\"[<IPv6>]:port\" too); empty "
                 "disables")
      ->capture_default_str();
  app.add_option("-v,--v", verbosity, "log verbosity: 0 info, 1 debug, 2 trace")
      ->capture_default_str();
  if (std::optional<int> rc = ParseCommandLine(app, argc, argv)) return *rc;
  plugin_opts.driver_name = prep.driver_name;
  if (plugin_opts.plugin_dir.empty()) {
    plugin_opts.plugin_dir = "/var/lib/kubelet/plugins/" + prep.driver_name;
  }

  node::UseKlogStderrLogger(verbosity);

  // Signals are read from a signalfd: block them before any thread starts.
  if (Status s = node::BlockStopSignals(); !s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }

  // Before everything that reports to the metrics, so it outlives them all.
  dra::DeviceCatalog catalog(node_name, nullptr, shares);
  dra::DraMetrics metrics(&catalog, !no_api_server);
  // A taken address does not stop the driver: node/listen_retry.h says why.
  std::unique_ptr<node::ListenRetry> metrics_listen;
  if (!metrics_address.empty()) {
    auto listen = node::ListenRetry::Start([&] { return metrics.Serve(metrics_address); });
    if (!listen.ok()) {
      SPDLOG_ERROR("start: {}", listen.status().message());
      return 1;
    }
    metrics_listen = std::move(*listen);
    if (metrics_listen->listening()) {
      SPDLOG_INFO("serving /metrics, /livez and /readyz on {}:{}",
                  metrics_address.substr(0, metrics_address.rfind(':')), metrics.port());
    }
  }

  dra::DeviceFilter filter;
  if (!devices_file.empty()) {
    auto loaded = dra::DeviceFilter::Load(devices_file);
    if (!loaded.ok()) {
      SPDLOG_ERROR("start: {}", loaded.status().message());
      return 1;
    }
    filter = std::move(loaded).value();
  }

  // The API server's configuration only: nothing here waits for the server. The version is
  // asked when first needed (ApiVersionSource), so the kubelet side serves checkpointed claims
  // and unprepares while the server is unreachable.
  std::unique_ptr<dra::CurlKubeClient> api;
  std::unique_ptr<dra::ApiVersionSource> versions;
  std::unique_ptr<dra::SlicePublisher> publisher;
  std::unique_ptr<dra::ClaimReader> reader;
  std::unique_ptr<dra::ClaimStatusWriter> status_writer;
  if (no_api_server) {
    SPDLOG_WARN("--no-api-server: no ResourceSlices are published and every claim fails");
    reader = std::make_unique<NoApiServerClaimReader>();
  } else {
    auto connected = ConnectApi(kubeconfig, service_account_dir);
    if (!connected.ok()) {
      SPDLOG_ERROR("start: {}", connected.status().message());
      return 1;
    }
    api = std::move(connected).value();
    api->SetErrorObserver([&metrics](std::string_view verb, std::string_view code) {
      metrics.CountApiError(verb, code);
    });
    versions = std::make_unique<dra::ApiVersionSource>(api.get());
    dra::PublisherOptions publisher_opts{prep.driver_name, node_name};
    publisher_opts.shares = shares;
    publisher_opts.taint_effect = taint_effect;
    publisher = std::make_unique<dra::SlicePublisher>(api.get(), publisher_opts, versions.get());
    reader = std::make_unique<dra::ApiClaimReader>(api.get(), versions.get());
    status_writer = std::make_unique<dra::ApiClaimStatusWriter>(api.get(), versions.get(), prep.driver_name);
  }

  // The loop wakes at least once per rescan; a rescan (discovery) itself is short.
  const auto watch_stall = 2 * std::chrono::seconds(watch_flags.rescan_s) + std::chrono::minutes(1);
  dra::HealthWatcher watcher(node::BuildDeviceSources(watch_flags, sysfs_root),
                             node::DeviceWatchOptionsFrom(watch_flags, sysfs_root),
                             std::move(filter), &catalog, [&metrics, watch_stall] {
                               metrics.Heartbeat("device watch loop", watch_stall);
                             });
  if (Status s = watcher.Start(); !s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }
  auto preparer = dra::Preparer::Create(prep, reader.get(), &catalog);
  if (!preparer.ok()) {
    SPDLOG_ERROR("start: {}", preparer.status().message());
    return 1;
  }
  // The claims' status.devices entries (claim_status_reporter.h): the checkpoint's claims are
  // reported again (the CNI's facts may have come while the driver was down).
  std::unique_ptr<dra::ClaimStatusReporter> status_reporter;
  if (status_writer) {
    dra::ClaimStatusReporterOptions status_opts;
    status_opts.driver_name = prep.driver_name;
    status_opts.pod_devices_dir = prep.pod_devices_dir;
    status_reporter = std::make_unique<dra::ClaimStatusReporter>(status_opts, status_writer.get(),
                                                                 &catalog, &metrics);
    for (const auto& [uid, claim] : (*preparer)->Claims()) {
      if (claim.phase == dra::ClaimPhase::kPrepared) status_reporter->Prepared(claim);
    }
    (*preparer)->ReportStatusTo(status_reporter.get());
    status_reporter->Start();
  }
  // Binding conditions (binding_conditions.h): claims the scheduler allocated on a port waiting
  // for the subnet manager, found by a watch of every namespace's claims, answered PortActive
  // once the device watch sees the port ACTIVE (or PortActivationFailed after the timeout).
  std::unique_ptr<dra::BindingConditionSetter> binding_setter;
  std::unique_ptr<dra::ClaimWatch> claim_watch;
  if (status_writer) {
    dra::BindingConditionOptions binding_opts;
    binding_opts.driver_name = prep.driver_name;
    binding_opts.timeout = std::chrono::seconds(binding_timeout_s);
    binding_setter = std::make_unique<dra::BindingConditionSetter>(binding_opts, status_writer.get(), &catalog);
    claim_watch = std::make_unique<dra::ClaimWatch>(api.get(), versions.get(), prep.driver_name, catalog.pool());
  }
  // The slice loop: publishes at start, on catalog changes, on every event of its watch on our
  // slices (kubelet and the garbage collector delete them), on each kubelet registration and
  // every minute (slice_sync.h). Made before the plugin, which calls it on a registration.
  std::unique_ptr<dra::SliceSync> slice_sync;
  if (publisher) {
    dra::SliceSyncOptions sync_opts;
    sync_opts.health_changes.max_changes = health_changes_per_minute;
    // Called on the loop's own thread, after slice_sync is set.
    sync_opts.on_publish = [&metrics, &slice_sync, pub = publisher.get()](const Status& s) {
      metrics.ObservePublish(s.ok(), pub->published().slices, pub->published().devices);
      if (!s.ok() || !slice_sync) return;
      const dra::SliceHealthCounts c = slice_sync->health_counts();
      const dra::PublisherStats& w = pub->stats();
      metrics.ObserveSliceHealth({c.tainted_devices, c.held_devices, c.changes_let_through,
                                  c.changes_held,
                                  static_cast<uint64_t>(w.creates + w.updates + w.deletes)});
    };
    slice_sync = std::make_unique<dra::SliceSync>(publisher.get(), &catalog, sync_opts, api.get());
  }
  dra::DraPlugin plugin(plugin_opts, preparer->get(), &catalog, &metrics);
  if (slice_sync) {
    plugin.OnRegistration([sync = slice_sync.get()](const dra::RegistrationVerdict& v) {
      if (v.registered) sync->Trigger("kubelet registered the driver");
    });
  }
  if (Status s = plugin.Start(); !s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }
  node::SocketDirWatch registration_watch;
  if (Status s = registration_watch.Start(plugin_opts.registry_dir,
                                          plugin_opts.driver_name + "-reg.sock");
      !s.ok()) {
    SPDLOG_ERROR("start: {}", s.message());
    return 1;
  }
  auto signals = node::StopSignals::Open();
  if (!signals.ok()) {
    SPDLOG_ERROR("start: {}", signals.status().message());
    return 1;
  }

  Status run_status;
  std::thread watch([&] { run_status = watcher.Run(); });
  std::thread sync;
  if (slice_sync) sync = std::thread([&] { slice_sync->Run(); });
  std::mutex claims_mu;
  std::condition_variable claims_cv;
  bool claims_stop = false;  // guarded by claims_mu
  std::thread binding, claims;
  if (binding_setter) {
    binding = std::thread([&] { binding_setter->Run(); });
    claims = std::thread([&] {
      claim_watch->Run(
          binding_setter.get(),
          [&] {
            std::lock_guard<std::mutex> lock(claims_mu);
            return claims_stop;
          },
          [&](std::chrono::milliseconds backoff) {
            std::unique_lock<std::mutex> lock(claims_mu);
            return !claims_cv.wait_for(lock, backoff, [&] { return claims_stop; });
          });
    });
  }

  WaitForSignal(*signals, plugin, registration_watch, watcher, metrics);

  if (api) api->StopRetries();  // a publish in a 429/5xx backoff ends now
  plugin.Stop();
  if (status_reporter) status_reporter->Stop();
  watcher.Stop();
  watch.join();
  {
    std::lock_guard<std::mutex> lock(claims_mu);
    claims_stop = true;  // the claim watch's stream asks about once a second
  }
  claims_cv.notify_all();
  if (claims.joinable()) claims.join();
  catalog.Shutdown();  // ends the slice loop and the binding-condition loop
  if (sync.joinable()) sync.join();
  if (binding.joinable()) binding.join();
  int rc = 0;
  if (delete_slices_on_exit && publisher &&
      !DeleteSlicesOnExit(*publisher, prep.driver_name, node_name)) {
    rc = 1;
  }
  if (!run_status.ok()) {
    SPDLOG_ERROR("{}", run_status.message());
    return 1;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // Issue 32 item 3: an API answer (up to kMaxObjectBytes for a claim) is one large buffer,
  // grown as it arrives. glibc raises its mmap threshold to the largest buffer freed, so later
  // ones come from the arena of whichever thread read them and stay resident there after they
  // are freed: the driver's RSS grew with the number of threads that ever read a large claim
  // (bench/dra_claim_memory_bench.cc: 16 reads of 1.4 MB claims, 52 MiB above the start with
  // glibc's default, 8 MiB with this). A fixed threshold maps every large buffer on its own and
  // returns it to the kernel when freed.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  return rdmak8s::node::RunGuarded("rdmak8s-dra-driver", RealMain, argc, argv);
}
