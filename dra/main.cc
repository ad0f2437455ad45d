// rdmak8s-dra-driver: flags -> options -> wiring. Everything else is in the libraries
// (rdmak8s_dra: the kubelet side; rdmak8s_dra_api: the API-server side).
#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
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
#include "dra/binding_conditions.h"
#include "dra/claim_reader.h"
#include "dra/claim_status_reporter.h"
#include "dra/device_catalog.h"
#include "dra/driver_flags.h"
#include "dra/health_watcher.h"
#include "dra/kubelet/plugin.h"
#include "dra/metrics.h"
#include "dra/preparer.h"
#include "node/device_watch_setup.h"
#include "node/listen_retry.h"
#include "node/program_main.h"
#include "node/socket_dir_watch.h"
#include "node/stop_signals.h"
#include "rdmak8s/base/command_line.h"

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

// The API server's side of the driver, or the stand-in of --no-api-server: only the
// configuration, nothing here waits for the server. The version is asked when first needed
// (ApiVersionSource), so the kubelet side serves checkpointed claims and unprepares while the
// server is unreachable.
struct ApiSide {
  std::unique_ptr<dra::CurlKubeClient> api;  // null with --no-api-server, as the rest but reader
  std::unique_ptr<dra::ApiVersionSource> versions;
  std::unique_ptr<dra::SlicePublisher> publisher;
  std::unique_ptr<dra::ClaimReader> reader;
  std::unique_ptr<dra::ClaimStatusWriter> status_writer;
};

StatusOr<ApiSide> BuildApiSide(const dra::DriverFlags& f, dra::DraMetrics& metrics) {
  ApiSide out;
  if (f.no_api_server) {
    SPDLOG_WARN("--no-api-server: no ResourceSlices are published and every claim fails");
    out.reader = std::make_unique<NoApiServerClaimReader>();
    return out;
  }
  RDMAK8S_ASSIGN_OR_RETURN(out.api, ConnectApi(f.kubeconfig, f.service_account_dir));
  out.api->SetErrorObserver([&metrics](std::string_view verb, std::string_view code) {
    metrics.CountApiError(verb, code);
  });
  out.versions = std::make_unique<dra::ApiVersionSource>(out.api.get());
  dra::PublisherOptions publisher_opts{f.prep.driver_name, f.node_name};
  publisher_opts.shares = f.shares;
  publisher_opts.taint_effect = f.taint_effect;
  out.publisher = std::make_unique<dra::SlicePublisher>(out.api.get(), publisher_opts, out.versions.get());
  out.reader = std::make_unique<dra::ApiClaimReader>(out.api.get(), out.versions.get());
  out.status_writer = std::make_unique<dra::ApiClaimStatusWriter>(out.api.get(), out.versions.get(),
                                                                  f.prep.driver_name);
  return out;
}

// /metrics, /livez, /readyz; a taken address does not stop the driver (node/listen_retry.h).
// Null when the address is empty.
StatusOr<std::unique_ptr<node::ListenRetry>> ServeMetrics(const std::string& address,
                                                          dra::DraMetrics& metrics) {
  if (address.empty()) return std::unique_ptr<node::ListenRetry>();
  RDMAK8S_ASSIGN_OR_RETURN(auto listen, node::ListenRetry::Start([&metrics, address] {
                             return metrics.Serve(address);
                           }));
  if (listen->listening()) {
    SPDLOG_INFO("serving /metrics, /livez and /readyz on {}:{}",
                address.substr(0, address.rfind(':')), metrics.port());
  }
  return listen;
}

StatusOr<dra::DeviceFilter> LoadDeviceFilter(const std::string& devices_file) {
  if (devices_file.empty()) return dra::DeviceFilter();
  return dra::DeviceFilter::Load(devices_file);
}

// The claims' status.devices entries (claim_status_reporter.h): the checkpoint's claims are
// reported again (the CNI's facts may have come while the driver was down). Null without an
// API server.
std::unique_ptr<dra::ClaimStatusReporter> StartStatusReporter(const dra::DriverFlags& f,
                                                              dra::ClaimStatusWriter* writer,
                                                              dra::DeviceCatalog& catalog,
                                                              dra::DraMetrics& metrics,
                                                              dra::Preparer& preparer) {
  if (writer == nullptr) return nullptr;
  dra::ClaimStatusReporterOptions opts;
  opts.driver_name = f.prep.driver_name;
  opts.pod_devices_dir = f.prep.pod_devices_dir;
  auto reporter = std::make_unique<dra::ClaimStatusReporter>(opts, writer, &catalog, &metrics);
  for (const auto& [uid, claim] : preparer.Claims()) {
    if (claim.phase == dra::ClaimPhase::kPrepared) reporter->Prepared(claim);
  }
  preparer.ReportStatusTo(reporter.get());
  reporter->Start();
  return reporter;
}

// Binding conditions (binding_conditions.h): claims the scheduler allocated on a port waiting
// for the subnet manager, found by a watch of every namespace's claims (its own thread, stopped
// by Stop), answered PortActive once the device watch sees the port ACTIVE (or
// PortActivationFailed after the timeout; that loop ends with the catalog's Shutdown).
class BindingConditionLoops {
 public:
  BindingConditionLoops(const dra::DriverFlags& f, const ApiSide& side, dra::DeviceCatalog& catalog) {
    if (!side.status_writer) return;
    dra::BindingConditionOptions opts;
    opts.driver_name = f.prep.driver_name;
    opts.timeout = std::chrono::seconds(f.binding_timeout_s);
    setter_ = std::make_unique<dra::BindingConditionSetter>(opts, side.status_writer.get(), &catalog);
    watch_ = std::make_unique<dra::ClaimWatch>(side.api.get(), side.versions.get(),
                                               f.prep.driver_name, catalog.pool());
  }

  void Start() {
    if (!setter_) return;
    setter_thread_ = std::thread([this] { setter_->Run(); });
    watch_thread_ = std::thread([this] {
      watch_->Run(
          setter_.get(),
          [this] {
            std::lock_guard<std::mutex> lock(mu_);
            return stop_;
          },
          [this](std::chrono::milliseconds backoff) {
            std::unique_lock<std::mutex> lock(mu_);
            return !cv_.wait_for(lock, backoff, [this] { return stop_; });
          });
    });
  }

  // The claim watch's stream asks about once a second whether to stop.
  void StopWatch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (watch_thread_.joinable()) watch_thread_.join();
  }

  // After the catalog's Shutdown.
  void JoinSetter() {
    if (setter_thread_.joinable()) setter_thread_.join();
  }

 private:
  std::unique_ptr<dra::BindingConditionSetter> setter_;
  std::unique_ptr<dra::ClaimWatch> watch_;
  std::thread setter_thread_, watch_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
};

// The slice loop: publishes at start, on catalog changes, on every event of its watch on our
// slices (kubelet and the garbage collector delete them), on each kubelet registration and
// every minute (slice_sync.h). Null without an API server. `holder` is where the caller keeps
// it: its publish observer reads the loop's counts through it, on the loop's own thread.
void MakeSliceSync(const dra::DriverFlags& f, const ApiSide& side, dra::DeviceCatalog& catalog,
                   dra::DraMetrics& metrics, std::unique_ptr<dra::SliceSync>& holder) {
  if (!side.publisher) return;
  dra::SliceSyncOptions opts;
  opts.health_changes.max_changes = f.health_changes_per_minute;
  opts.on_publish = [&metrics, &holder, pub = side.publisher.get()](const Status& s) {
    metrics.ObservePublish(s.ok(), pub->published().slices, pub->published().devices);
    if (!s.ok() || !holder) return;
    const dra::SliceHealthCounts c = holder->health_counts();
    const dra::PublisherStats& w = pub->stats();
    metrics.ObserveSliceHealth({c.tainted_devices, c.held_devices, c.changes_let_through,
                                c.changes_held,
                                static_cast<uint64_t>(w.creates + w.updates + w.deletes)});
  };
  holder = std::make_unique<dra::SliceSync>(side.publisher.get(), &catalog, opts, side.api.get());
}

int StartFailed(const Status& s) {
  SPDLOG_ERROR("start: {}", s.message());
  return 1;
}

int RealMain(int argc, char** argv) {
  dra::DriverFlags f = dra::DefaultDriverFlags();
  CLI::App app{"rdmak8s-dra-driver: prepares RDMA devices (InfiniBand HCAs, RoCE and iWARP NICs) "
               "allocated through Dynamic Resource Allocation, as kubelet's DRA plugin, and "
               "publishes them as this node's ResourceSlices."};
  dra::AddDriverFlags(app, f);
  if (std::optional<int> rc = ParseCommandLine(app, argc, argv)) return *rc;
  dra::FinishDriverFlags(f);
  node::UseKlogStderrLogger(f.verbosity);

  // Signals are read from a signalfd: block them before any thread starts.
  if (Status s = node::BlockStopSignals(); !s.ok()) return StartFailed(s);

  // Before everything that reports to the metrics, so it outlives them all.
  dra::DeviceCatalog catalog(f.node_name, nullptr, f.shares);
  dra::DraMetrics metrics(&catalog, !f.no_api_server);
  auto metrics_listen = ServeMetrics(f.metrics_address, metrics);
  if (!metrics_listen.ok()) return StartFailed(metrics_listen.status());
  auto filter = LoadDeviceFilter(f.devices_file);
  if (!filter.ok()) return StartFailed(filter.status());
  auto side = BuildApiSide(f, metrics);
  if (!side.ok()) return StartFailed(side.status());

  // The loop wakes at least once per rescan; a rescan (discovery) itself is short.
  const auto watch_stall = 2 * std::chrono::seconds(f.watch.rescan_s) + std::chrono::minutes(1);
  dra::HealthWatcher watcher(node::BuildDeviceSources(f.watch, f.sysfs_root),
                             node::DeviceWatchOptionsFrom(f.watch, f.sysfs_root),
                             *std::move(filter), &catalog, [&metrics, watch_stall] {
                               metrics.Heartbeat("device watch loop", watch_stall);
                             });
  if (Status s = watcher.Start(); !s.ok()) return StartFailed(s);
  auto preparer = dra::Preparer::Create(f.prep, side->reader.get(), &catalog);
  if (!preparer.ok()) return StartFailed(preparer.status());
  std::unique_ptr<dra::ClaimStatusReporter> status_reporter =
      StartStatusReporter(f, side->status_writer.get(), catalog, metrics, **preparer);
  BindingConditionLoops binding(f, *side, catalog);
  // Made before the plugin, which calls it on a registration.
  std::unique_ptr<dra::SliceSync> slice_sync;
  MakeSliceSync(f, *side, catalog, metrics, slice_sync);
  dra::DraPlugin plugin(f.plugin, preparer->get(), &catalog, &metrics);
  if (slice_sync) {
    plugin.OnRegistration([sync = slice_sync.get()](const dra::RegistrationVerdict& v) {
      if (v.registered) sync->Trigger("kubelet registered the driver");
    });
  }
  if (Status s = plugin.Start(); !s.ok()) return StartFailed(s);
  node::SocketDirWatch registration_watch;
  if (Status s = registration_watch.Start(f.plugin.registry_dir, f.plugin.driver_name + "-reg.sock");
      !s.ok()) {
    return StartFailed(s);
  }
  auto signals = node::StopSignals::Open();
  if (!signals.ok()) return StartFailed(signals.status());

  Status run_status;
  std::thread watch([&] { run_status = watcher.Run(); });
  std::thread sync;
  if (slice_sync) sync = std::thread([&] { slice_sync->Run(); });
  binding.Start();

  WaitForSignal(*signals, plugin, registration_watch, watcher, metrics);

  // Shutdown, in the order each part's users stop.
  if (side->api) side->api->StopRetries();  // a publish in a 429/5xx backoff ends now
  plugin.Stop();
  if (status_reporter) status_reporter->Stop();
  watcher.Stop();
  watch.join();
  binding.StopWatch();
  catalog.Shutdown();  // ends the slice loop and the binding-condition loop
  if (sync.joinable()) sync.join();
  binding.JoinSetter();
  int rc = 0;
  if (f.delete_slices_on_exit && side->publisher &&
      !DeleteSlicesOnExit(*side->publisher, f.prep.driver_name, f.node_name)) {
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
