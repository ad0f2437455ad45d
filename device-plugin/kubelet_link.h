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
// How long a registered pool waits for a ListAndWatch stream after `losses` re-registrations for
// a lost stream in a row: `first`, doubling, at most 30 s (and never less than `first`).
std::chrono::milliseconds StreamWait(std::chrono::milliseconds first, int losses);

// Which kubelet serves a kubelet.sock. Every kubelet start makes a new socket file, so the file's
// (st_dev, st_ino, st_ctim) tells one kubelet start from the next: registering twice with one
// kubelet is what makes kubelet v1.36 drop the resource to 0 (see KubeletLink). All zero: none
// or unknown.
struct KubeletInstance {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t ctime_ns = 0;
  bool known() const { return ino != 0; }
  friend bool operator==(const KubeletInstance&, const KubeletInstance&) = default;
};
// The instance behind `kubelet_socket` now (lstat); unknown when there is no file.
KubeletInstance KubeletInstanceOf(const std::string& kubelet_socket);

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
  // The context of the call in flight (null: none any more) and the kubelet it was made on;
  // Cancel() cancels it. False, with nothing set, when already cancelled.
  bool SetCall(grpc::ClientContext* ctx, const KubeletInstance& instance = {});
  // True while the Register call itself is in flight: kubelet may already have it.
  bool in_call() const;
  // The kubelet the call was made on (unknown before the call, or when kubelet.sock changed
  // while connecting).
  KubeletInstance instance() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  grpc::ClientContext* call_ = nullptr;  // guarded by mu_
  KubeletInstance instance_;             // guarded by mu_
  int event_fd_ = -1;
};

// v1beta1 Registration.Register on `kubelet_socket` for `endpoint` (a file name in the kubelet
// dir), all within `timeout`. Connects itself, retrying every 10 ms (doubling, at most 200 ms)
// while the socket is missing, refuses (a kubelet between its bind and its listen) or closes
// before kubelet's first frame (a kubelet going away), then makes the call on that one
// connection; the connection is closed when this returns, whatever the outcome (gRPC 1.51's own
// channels leak a connection whose call is cancelled just as it connects). `cancel`, when given,
// may stop it from another thread at any step, and records which kubelet the call went to
// (kubelet.sock's instance, when it was the same just before and just after connecting).
// kDeadlineExceeded (no kubelet answered in time),
// kUnavailable / kInternal from kubelet's answer, kInternal when cancelled, each prefixed
// "register <resource> with kubelet <socket>".
Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                           const std::string& resource, std::chrono::milliseconds timeout,
                           RegisterCancellation* cancel = nullptr);

// KubeletRegistrar runs RegisterWithKubelet on a thread of its own, so that a kubelet.sock nobody
// answers on (a stale file, a kubelet that has bound but does not serve yet) cannot stall the
// caller's event loop for the registration timeout. Results queue up and fd() (an eventfd) turns
// readable; Drain() hands them over. Submit() for a resource replaces that resource's queued
// request; Supersede() cancels its attempt in flight unless kubelet may have it (see there).
// Wake() makes fd() readable with no result (news for the caller's loop from other threads).
//
// Thread safety: Submit/Supersede/Drain/Shutdown from one thread (the event loop); Wake from any;
// the worker is internal.
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
    KubeletInstance instance;  // the kubelet the call was made on (unknown: none, or unsure)
  };

  KubeletRegistrar();
  ~KubeletRegistrar();  // Shutdown()
  KubeletRegistrar(const KubeletRegistrar&) = delete;
  KubeletRegistrar& operator=(const KubeletRegistrar&) = delete;

  // Creates the eventfd and starts the worker.
  Status Start();
  int fd() const { return event_fd_; }
  void Submit(Request request);
  // The attempt in flight for `resource`, if any, is cancelled unless it is in its call on
  // `current` (that kubelet may have the Register already: cancelling and registering again
  // would register twice). True when nothing of `resource` is left in a call on `current`.
  bool Supersede(const std::string& resource, const KubeletInstance& current);
  void Wake() const;
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

// KubeletLink keeps each pool's socket served and registered with kubelet, once per kubelet:
//   - Register(pool) submits a Register (device-plugin mode) when kubelet.sock is there, else
//     waits for it to appear; it does nothing while the pool's socket could not be served again;
//   - one registration per pool per kubelet start: kubelet v1.36 given two Registers for one
//     resource ends the first ListAndWatch when the second stream opens, then closes the second
//     connection too and keeps the resource at 0 ("ListAndWatch ended unexpectedly", every device
//     Unhealthy) until the plugin registers again. So a pool registered with the kubelet behind
//     kubelet.sock now (KubeletInstance) is not registered again, and a Register in flight that
//     kubelet may already have is never cancelled to be sent again: its result decides (accepted
//     by the kubelet behind kubelet.sock now: registered; else: register again at once);
//   - HandleRegistrations() takes the Register results: accepted -> registered; failed -> tried
//     again after RegisterBackoff; a superseded result (a newer Register, a removed pool) is
//     dropped. It also follows the pools' ListAndWatch streams (the servers wake fd()): a pool
//     registered whose stream kubelet ended, or that kubelet never opened, with no new stream
//     within StreamWait(), registers again (whatever ended it, kubelet keeps the resource at 0
//     until then);
//   - OnDirEvent() follows the socket directory: kubelet.sock created (a kubelet started) ->
//     serve again what kubelet removed and register every pool not yet registered with it;
//     kubelet.sock removed -> every pool unregistered until the new one appears; our socket
//     removed -> serve again (PoolServer::Start) and register again; serving again that fails is
//     retried every second;
//   - OnTimer() runs the retries that are due; NextWakeup() says when the next one is.
// Metrics (optional) get every pool's registered state, whether it has a live ListAndWatch
// stream (readiness wants both) and each Register's result.
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
    // How long a registered pool may go without a ListAndWatch stream before it registers again
    // (the first time; StreamWait() doubles it for repeated losses).
    std::chrono::milliseconds stream_wait{5000};
  };

  // What the link knows of one pool.
  struct PoolLink {
    std::string resource;
    PoolServer* server = nullptr;  // not owned
    bool registered = false;
    uint64_t register_seq = 0;  // the registration in flight (0: none); older results are moot
    int register_failures = 0;
    Clock::time_point retry_at{};  // when to Register again (zero: not scheduled)
    // The kubelet that accepted the registration (known only while registered).
    KubeletInstance instance;
    // Something asked for a Register while one was in flight: its result decides whether to
    // register again.
    bool recheck = false;
    // kubelet holds a ListAndWatch stream of the pool (as last seen on the loop).
    bool streaming = false;
    Clock::time_point streaming_since{};
    // Registered without a stream: when to register again (zero: not waiting).
    Clock::time_point stream_deadline{};
    int stream_losses = 0;  // re-registrations for a lost stream in a row
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
  // Follows the pool's ListAndWatch streams (PoolServer::open_streams) at `now`; registers again
  // when the stream wait has run out.
  void CheckStream(PoolLink& pool, Clock::time_point now);
  std::string KubeletSocket() const { return options_.kubelet_dir + "/" + kKubeletSocket; }

  Options options_;
  std::string socket_dir_;
  KubeletRegistrar registrar_;  // Register calls off the event loop
  uint64_t register_seq_ = 0;
  std::map<std::string, PoolLink> pools_;  // pool name -> its link
};

}  // namespace rdmak8s::dp
