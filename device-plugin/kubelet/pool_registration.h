// PoolRegistrations: each pool's registration with kubelet, a state machine on the daemon's event
// loop: serve each pool's socket, register it once per kubelet start (through KubeletRegistrar),
// serve and register again when kubelet or anything else removes what it needs.
//
// What kubelet expects of a device plugin (the sriov-network-device-plugin's lessons): register
// only once the socket serves (the kubelet dials back inside Register); register again whenever
// a kubelet starts (it removes every socket in its directory, then creates kubelet.sock); serve
// again at once when our socket is removed by anything, since kubelet only ever dials what
// registered; and never let an unanswered kubelet.sock stall the caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device-plugin/kubelet/plugin_server.h"
#include "device-plugin/kubelet/register_call.h"
#include "device-plugin/kubelet/registrar.h"
#include "device-plugin/metrics/metrics.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

// PoolRegistrations keeps each pool's socket served and registered with kubelet, once per kubelet:
//   - Register(pool) submits a Register (device-plugin mode) when kubelet.sock is there, else
//     waits for it to appear; it does nothing while the pool's socket could not be served again;
//   - one registration per pool per kubelet start: kubelet v1.36 given two Registers for one
//     resource ends the first ListAndWatch when the second stream opens, then closes the second
//     connection too and keeps the resource at 0 ("ListAndWatch ended unexpectedly", every device
//     Unhealthy) until the plugin registers again. So a pool registered with the kubelet behind
//     kubelet.sock now (KubeletInstance) is not registered again, and a Register in flight that
//     kubelet may already have is never cancelled to be sent again: its result decides (accepted
//     by the kubelet behind kubelet.sock now: registered; else: register again at once);
//   - a Register whose answer did not come in time, in its call on the kubelet there now, may
//     still succeed on kubelet's side: kubelet's Register handler dials our socket back, calls
//     GetDevicePluginOptions, stores the plugin, answers, and opens ListAndWatch (devicemanager
//     server.go / handler.go / client.go), and a loaded kubelet does that after our deadline.
//     Such a Register is "unsettled" and no other is sent to that kubelet until a signal decides:
//     kubelet dialled this socket back since it was sent (PoolServer::dial_backs) or opened a
//     stream -> registered; a new kubelet.sock -> register with that one; nothing within
//     dial_back_wait (kubelet gives its dial-back 10 s) -> register again;
//   - HandleRegistrations() takes the Register results: accepted -> registered; failed -> tried
//     again after RegisterBackoff; a superseded result (a newer Register, a removed pool) is
//     dropped. It also follows the pools' ListAndWatch streams and kubelet's dial-backs (the
//     servers wake fd()): a pool registered whose stream kubelet ended with no new stream within
//     StreamWait(), or whose first stream kubelet has not opened within first_stream_wait after
//     dialling back for it, registers again (whatever ended it, kubelet keeps the resource at 0
//     until then) — but only when a kubelet listens on the kubelet.sock it registered with; a
//     kubelet that is down gets nothing until its successor's kubelet.sock appears;
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
class PoolRegistrations {
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
    // How long an accepted Register that kubelet dialled back for may go before kubelet opens
    // its first stream, while kubelet keeps that connection open: kubelet opens ListAndWatch
    // from a goroutine after Register returns, which on a loaded node took over 5 s, and a
    // Register sent in that gap is a second one. (A kubelet that closed the connection has
    // dropped the plugin: the stream wait applies.)
    std::chrono::milliseconds first_stream_wait{30000};
    // How long an unsettled Register (its answer did not come in time) waits for kubelet's
    // dial-back before registering again: kubelet's dial-back gives up after 10 s (client.go),
    // plus room for a loaded kubelet to get to it.
    std::chrono::milliseconds dial_back_wait{15000};
  };

  // What the link knows of one pool.
  struct PoolRegistration {
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
    // What kubelet had called on our socket when the last Register was sent: kubelet dialled
    // back (or streamed) for it when that grew (PoolServer::KubeletCalls).
    PoolServer::KubeletCalls calls_at_register;
    // ... and as last seen on the loop: a call since (a stream that opened and ended between two
    // looks included) starts the stream wait afresh.
    PoolServer::KubeletCalls calls_seen;
    // The kubelet that may still accept a Register whose answer did not come in time (unknown:
    // none unsettled), and when to stop waiting for its dial-back.
    KubeletInstance unsettled;
    Clock::time_point unsettled_until{};
    // kubelet holds a ListAndWatch stream of the pool (as last seen on the loop).
    bool streaming = false;
    Clock::time_point streaming_since{};
    // Registered without a stream: when to look again (zero: not waiting), and since when.
    Clock::time_point stream_deadline{};
    Clock::time_point stream_wait_since{};
    int stream_losses = 0;  // re-registrations for a lost stream in a row
    // Serving again failed: when to try again; zero while serving.
    Clock::time_point serve_retry_at{};
  };

  explicit PoolRegistrations(Options options);
  ~PoolRegistrations();  // Shutdown()
  PoolRegistrations(const PoolRegistrations&) = delete;
  PoolRegistrations& operator=(const PoolRegistrations&) = delete;

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
  const PoolRegistration* pool(const std::string& name) const;

 private:
  // Stops and restarts the pool's server (its socket was removed); not registered until the
  // next Register.
  void ServeAgain(PoolRegistration& pool, Clock::time_point now);
  // ServeAgain, then a fresh registration (a new backoff) once the socket is served.
  void ServeAndRegisterAgain(PoolRegistration& pool, Clock::time_point now);
  void Register(PoolRegistration& pool);
  void SetRegistered(PoolRegistration& pool, bool registered);
  // Follows the pool's ListAndWatch streams (PoolServer::open_streams) at `now`; registers again
  // when the stream wait has run out.
  void CheckStream(PoolRegistration& pool, Clock::time_point now);
  // An unsettled Register decided by what kubelet did since (see the class comment): true when
  // it is still waiting.
  bool Unsettled(PoolRegistration& pool, bool streaming, Clock::time_point now);
  // kubelet made the call `count` counts (dial_backs, streams) since the pool's last Register
  // was sent.
  static bool CalledSinceRegister(const PoolRegistration& pool,
                                  uint64_t PoolServer::KubeletCalls::*count);
  std::string KubeletSocket() const { return options_.kubelet_dir + "/" + kKubeletSocket; }

  Options options_;
  std::string socket_dir_;
  KubeletRegistrar registrar_;  // Register calls off the event loop
  uint64_t register_seq_ = 0;
  std::map<std::string, PoolRegistration> pools_;  // pool name -> its link
};

}  // namespace rdmak8s::dp
