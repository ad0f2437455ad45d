// The link between our pools and kubelet: which registration kubelet expects, where the pool
// sockets live, the v1beta1 Register call (run off the event loop by KubeletRegistrar), and the
// registration state machine of each pool (KubeletLink).
//
// What kubelet expects of a device plugin (the sriov-network-device-plugin's lessons): register
// only once the socket serves (the kubelet dials back inside Register); register again whenever
// a kubelet starts (it removes every socket in its directory, then creates kubelet.sock); serve
// again at once when our socket is removed by anything, since kubelet only ever dials what
// registered; and never let an unanswered kubelet.sock stall the caller.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "device-plugin/metrics.h"
#include "device-plugin/plugin_server.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dp {

inline constexpr char kKubeletSocket[] = "kubelet.sock";

// kDevicePlugin: our sockets in kubelet's device-plugins dir, and we call Register on its
// kubelet.sock. kPluginWatcher: our sockets in the plugins_registry dir, and kubelet's plugin
// watcher dials us (GetInfo, NotifyRegistrationStatus). kAuto: pick one (ResolveRegistrationMode).
enum class RegistrationMode { kAuto, kDevicePlugin, kPluginWatcher };
// "auto" | "device-plugin" | "plugin-watcher"; anything else is kInvalidArgument naming the flag.
StatusOr<RegistrationMode> ParseRegistrationMode(std::string_view s);
// `requested`, with kAuto made kDevicePlugin when `kubelet_dir` exists or `plugins_registry_dir`
// does not, else kPluginWatcher. Never returns kAuto.
RegistrationMode ResolveRegistrationMode(RegistrationMode requested, const std::string& kubelet_dir,
                                         const std::string& plugins_registry_dir);
// File name of a resource's socket (also the endpoint told to kubelet):
// "rdmak8s-<resource>.sock" with every '/' made '-'.
std::string SocketFileName(const std::string& resource);
// How long to wait after the `failures`-th Register in a row failed (failures >= 1): 1 s,
// doubling, at most 30 s.
std::chrono::seconds RegisterBackoff(int failures);

// Lets another thread cancel a RegisterWithKubelet at any step: connecting, waiting for
// kubelet's first frame, or in the call. Cancel() is sticky and may come before the call starts.
//
// Thread safety: Cancel() and cancelled() from any thread; SetCall() from the thread running the
// Register.
class RegisterCancellation {
 public:
  RegisterCancellation();  // an eventfd; without one, a cancel is still seen between steps
  ~RegisterCancellation();
  RegisterCancellation(const RegisterCancellation&) = delete;
  RegisterCancellation& operator=(const RegisterCancellation&) = delete;

  void Cancel();
  bool cancelled() const;
  // Readable once cancelled; -1 when no eventfd could be made.
  int fd() const { return event_fd_; }
  // The context of the call in flight (null: none any more); Cancel() cancels it. False, with
  // nothing set, when already cancelled.
  bool SetCall(grpc::ClientContext* ctx);

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  grpc::ClientContext* call_ = nullptr;  // guarded by mu_
  int event_fd_ = -1;
};

// v1beta1 Registration.Register on `kubelet_socket` for `endpoint` (a file name in the kubelet
// dir), all within `timeout`. Connects itself, retrying every 10 ms (doubling, at most 200 ms)
// while the socket is missing, refuses (a kubelet between its bind and its listen) or closes
// before kubelet's first frame (a kubelet going away), then makes the call on that one
// connection; the connection is closed when this returns, whatever the outcome (gRPC 1.51's own
// channels leak a connection whose call is cancelled just as it connects). `cancel`, when given,
// may stop it from another thread at any step. kDeadlineExceeded (no kubelet answered in time),
// kUnavailable / kInternal from kubelet's answer, kInternal when cancelled, each prefixed
// "register <resource> with kubelet <socket>".
Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                           const std::string& resource, std::chrono::milliseconds timeout,
                           RegisterCancellation* cancel = nullptr);

// KubeletRegistrar runs RegisterWithKubelet on a thread of its own, so that a kubelet.sock nobody
// answers on (a stale file, a kubelet that has bound but does not serve yet) cannot stall the
// caller's event loop for the registration timeout. Results queue up and fd() (an eventfd) turns
// readable; Drain() hands them over. Submit() for a resource replaces that resource's queued
// request and cancels its call in flight (kubelet restarted: the old attempt is moot).
//
// Thread safety: Submit/Drain/Shutdown from one thread (the event loop); the worker is internal.
class KubeletRegistrar {
 public:
  struct Request {
    uint64_t seq = 0;  // echoed in the result, so the caller can drop superseded ones
    std::string kubelet_socket;
    std::string endpoint;
    std::string resource;
    std::chrono::milliseconds timeout{5000};
  };
  struct Result {
    uint64_t seq = 0;
    std::string resource;
    Status status;
  };

  KubeletRegistrar();
  ~KubeletRegistrar();  // Shutdown()
  KubeletRegistrar(const KubeletRegistrar&) = delete;
  KubeletRegistrar& operator=(const KubeletRegistrar&) = delete;

  // Creates the eventfd and starts the worker.
  Status Start();
  int fd() const { return event_fd_; }
  void Submit(Request request);
  std::vector<Result> Drain();
  // Cancels the call in flight, drops queued requests, joins the worker. Idempotent.
  void Shutdown();

 private:
  void Loop();

  int event_fd_ = -1;
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Request> queue_;
  std::vector<Result> results_;
  std::string inflight_resource_;
  RegisterCancellation* inflight_cancel_ = nullptr;  // guarded by mu_
};

// KubeletLink keeps each pool's socket served and registered with kubelet:
//   - Register(pool) submits a Register (device-plugin mode) when kubelet.sock is there, else
//     waits for it to appear; it does nothing while the pool's socket could not be served again;
//   - HandleRegistrations() takes the Register results: accepted -> registered; failed -> tried
//     again after RegisterBackoff; a superseded result (a newer Register, a removed pool) is
//     dropped;
//   - OnDirEvent() follows the socket directory: kubelet.sock created (a kubelet started) ->
//     serve again what kubelet removed and register every pool at once; kubelet.sock removed ->
//     every pool unregistered until the new one appears; our socket removed -> serve again
//     (PoolServer::Start) and register again; serving again that fails is retried every second;
//   - OnTimer() runs the retries that are due; NextWakeup() says when the next one is.
// Metrics (optional) get every pool's registered state and each Register's result.
//
// Every time is passed in (`now`, the steady clock): the caller's loop reads the clock once.
// Thread safety: none; one thread (the daemon's event loop).
class KubeletLink {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    RegistrationMode mode = RegistrationMode::kDevicePlugin;  // resolved: not kAuto
    std::string kubelet_dir;           // kubelet.sock's directory (device-plugin mode)
    std::string plugins_registry_dir;  // the plugin watcher's directory
    std::chrono::milliseconds register_timeout{5000};
    Metrics* metrics = nullptr;  // optional, not owned
  };

  // What the link knows of one pool.
  struct PoolLink {
    std::string resource;
    PoolServer* server = nullptr;  // not owned
    bool registered = false;
    uint64_t register_seq = 0;  // the registration in flight (0: none); older results are moot
    int register_failures = 0;
    Clock::time_point retry_at{};  // when to Register again (zero: not scheduled)
    // Serving again failed: when to try again; zero while serving.
    Clock::time_point serve_retry_at{};
  };

  explicit KubeletLink(Options options);
  ~KubeletLink();  // Shutdown()
  KubeletLink(const KubeletLink&) = delete;
  KubeletLink& operator=(const KubeletLink&) = delete;

  // Starts the registrar's thread. An error when its eventfd cannot be created.
  Status Start();
  // Readable when Register results are waiting (HandleRegistrations).
  int fd() const { return registrar_.fd(); }
  RegistrationMode mode() const { return options_.mode; }
  // Where the pool sockets are: the kubelet dir or the plugin watcher's dir, by mode.
  const std::string& socket_dir() const { return socket_dir_; }
  // What a pool's server is started with: its socket path, the Registration service in
  // plugin-watcher mode, and the hook that reports the watcher's verdict to the metrics.
  PoolServer::Options ServerOptions(const std::string& resource) const;

  // A pool to keep registered (not registered yet: reported so to the metrics). `server` must
  // outlive the pool's Remove (or this link). Replaces a pool of that name.
  void Add(const std::string& pool, const std::string& resource, PoolServer* server);
  // Forgets the pool; a result of its Register in flight is then dropped.
  void Remove(const std::string& pool);

  // Registers the pool (device-plugin mode; no-op otherwise, kubelet's watcher dials us, and
  // while its socket waits to be served again). Whatever was in flight for it is superseded.
  void Register(const std::string& pool);
  void RegisterAll();
  void HandleRegistrations(Clock::time_point now);
  // An inotify event (IN_CREATE, IN_DELETE, IN_MOVED_TO, IN_MOVED_FROM) on `name` in
  // socket_dir(). After an inotify overflow, (IN_CREATE, kKubeletSocket) re-checks everything.
  void OnDirEvent(uint32_t mask, const std::string& name, Clock::time_point now);
  // Serves again and registers what is due at `now`.
  void OnTimer(Clock::time_point now);
  // The earliest retry time, or `bound` when none is sooner.
  Clock::time_point NextWakeup(Clock::time_point bound) const;
  // Cancels a Register in flight and stops the registrar (shutting down does not wait for
  // kubelet). Idempotent.
  void Shutdown();

  // The pool's state; null when not added. For the daemon's loop and tests.
  const PoolLink* pool(const std::string& name) const;

 private:
  // Stops and restarts the pool's server (its socket was removed); not registered until the
  // next Register.
  void ServeAgain(PoolLink& pool, Clock::time_point now);
  // ServeAgain, then a fresh registration (a new backoff) once the socket is served.
  void ServeAndRegisterAgain(PoolLink& pool, Clock::time_point now);
  void Register(PoolLink& pool);
  void SetRegistered(PoolLink& pool, bool registered);

  Options options_;
  std::string socket_dir_;
  KubeletRegistrar registrar_;  // Register calls off the event loop
  uint64_t register_seq_ = 0;
  std::map<std::string, PoolLink> pools_;  // pool name -> its link
};

}  // namespace rdmak8s::dp
