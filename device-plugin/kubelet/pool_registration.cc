// Each pool's registration with kubelet (pool_registration.h).
#include "device-plugin/kubelet/pool_registration.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include <spdlog/spdlog.h>

namespace rdmak8s::dp {

namespace {

using Clock = PoolRegistrations::Clock;

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

PoolRegistrations::PoolRegistrations(Options options)
    : options_(std::move(options)),
      socket_dir_(options_.mode == RegistrationMode::kPluginWatcher ? options_.plugins_registry_dir
                                                                    : options_.kubelet_dir) {}

PoolRegistrations::~PoolRegistrations() { Shutdown(); }

Status PoolRegistrations::Start() { return registrar_.Start(); }

void PoolRegistrations::Shutdown() { registrar_.Shutdown(); }

PoolServer::Options PoolRegistrations::ServerOptions(const std::string& resource) const {
  PoolServer::Options so;
  so.socket_path = socket_dir_ + "/" + SocketFileName(resource);
  so.plugin_watcher = options_.mode == RegistrationMode::kPluginWatcher;
  Metrics* metrics = options_.metrics;
  so.hooks.on_watcher_status = [metrics](const std::string& resource, bool ok, const std::string&) {
    if (!metrics) return;
    metrics->CountRegistration(resource, ok);
    metrics->SetRegistered(resource, ok);
  };
  // A stream opened or ended: HandleRegistrations looks (the server stops before this link goes).
  const KubeletRegistrar* registrar = &registrar_;
  so.hooks.on_kubelet_call = [registrar] { registrar->Wake(); };
  return so;
}

void PoolRegistrations::Add(const std::string& pool, const std::string& resource, PoolServer* server) {
  PoolRegistration link;
  link.resource = resource;
  link.server = server;
  if (options_.metrics) {
    options_.metrics->SetRegistered(resource, false);
    options_.metrics->SetStreaming(resource, false);
  }
  pools_[pool] = std::move(link);
}

void PoolRegistrations::Remove(const std::string& pool) { pools_.erase(pool); }

const PoolRegistrations::PoolRegistration* PoolRegistrations::pool(const std::string& name) const {
  auto it = pools_.find(name);
  return it == pools_.end() ? nullptr : &it->second;
}

void PoolRegistrations::SetRegistered(PoolRegistration& pool, bool registered) {
  pool.registered = registered;
  if (!registered) {
    pool.instance = {};
    pool.stream_deadline = {};
  }
  if (options_.metrics) options_.metrics->SetRegistered(pool.resource, registered);
}

void PoolRegistrations::Register(const std::string& pool) {
  auto it = pools_.find(pool);
  if (it != pools_.end()) Register(it->second);
}

void PoolRegistrations::RegisterAll() {
  for (auto& [name, pool] : pools_) Register(pool);
}

void PoolRegistrations::Register(PoolRegistration& pool) {
  if (options_.mode != RegistrationMode::kDevicePlugin) return;  // kubelet's plugin watcher dials us
  if (pool.serve_retry_at != Clock::time_point{}) return;  // not serving: after ServeAgain
  const std::string kubelet_sock = KubeletSocket();
  if (pool.register_seq != 0) {
    // A Register in flight. One that kubelet may have already is not cancelled to be sent again
    // (two Registers drop the resource to 0, see the header): its result decides.
    pool.recheck = true;
    registrar_.Supersede(pool.resource, KubeletInstanceOf(kubelet_sock));
    return;
  }
  if (pool.unsettled.known() && pool.unsettled == KubeletInstanceOf(kubelet_sock)) {
    // That kubelet may still accept the last Register: another would be a second (CheckStream
    // decides when it settles).
    SPDLOG_DEBUG("{}: the Register kubelet may still accept is awaited", pool.resource);
    return;
  }
  pool.unsettled = {};
  if (!Exists(kubelet_sock)) {
    SetRegistered(pool, false);
    pool.retry_at = {};  // waits for kubelet.sock to appear (inotify)
    SPDLOG_DEBUG("kubelet not up ({} missing): {} registers when it appears", kubelet_sock,
                 pool.resource);
    return;
  }
  // Off the loop: a kubelet.sock nobody answers on would otherwise hold SIGTERM, health updates
  // and inotify back for the whole timeout. The result comes back through HandleRegistrations.
  pool.register_seq = ++register_seq_;
  pool.recheck = false;
  pool.retry_at = {};
  pool.calls_at_register = pool.server->kubelet_calls();
  registrar_.Submit({pool.register_seq, kubelet_sock, SocketFileName(pool.resource), pool.resource,
                     options_.register_timeout});
}

void PoolRegistrations::HandleRegistrations(Clock::time_point now) {
  for (auto& r : registrar_.Drain()) {
    auto it = std::find_if(pools_.begin(), pools_.end(), [&](const auto& p) {
      return p.second.resource == r.resource && p.second.register_seq == r.seq;
    });
    if (it == pools_.end()) continue;  // superseded, or the pool is gone
    PoolRegistration& pool = it->second;
    pool.register_seq = 0;
    const Status& s = r.status;
    const bool recheck = std::exchange(pool.recheck, false);
    const KubeletInstance current = KubeletInstanceOf(KubeletSocket());
    if (!s.ok() && s.code() == StatusCode::kDeadlineExceeded && r.instance.known() &&
        r.instance == current) {
      // The call reached the kubelet there now and its answer did not come in time: kubelet may
      // still accept it (it is in its dial-back). Another Register now would be a second.
      if (options_.metrics) options_.metrics->CountRegistration(pool.resource, false);
      SetRegistered(pool, false);
      pool.register_failures = 0;
      pool.unsettled = current;
      pool.unsettled_until = now + options_.dial_back_wait;
      SPDLOG_INFO("{}: the Register's answer did not come in time ({}); kubelet may still accept "
                  "it: waiting for its dial-back", pool.resource, s.message());
      Unsettled(pool, pool.server->open_streams() > 0, now);
      continue;
    }
    if (recheck) {
      // Asked again while this one was in flight (kubelet restarted, our socket was served
      // again): it stands only if the kubelet there now accepted it, dialling back the socket we
      // serve now. kubelet dials back before it answers, so a dial-back of an earlier serving
      // (our socket removed meanwhile) means kubelet holds a connection to a socket that is gone.
      const bool same_kubelet = r.instance.known() && r.instance == current;
      const bool served_since = pool.server->kubelet_calls().serving != pool.calls_at_register.serving;
      const bool dialled_this_serving =
          !served_since || CalledSinceRegister(pool, &PoolServer::KubeletCalls::dial_backs);
      if (!(s.ok() && same_kubelet && dialled_this_serving)) {
        if (s.ok() && options_.metrics) options_.metrics->CountRegistration(pool.resource, true);
        const std::string why = !s.ok()        ? "ended: " + s.message()
                                : !same_kubelet ? std::string("reached a kubelet that has gone")
                                                : std::string("was dialled back on our socket before "
                                                              "it was served again");
        SPDLOG_INFO("{}: the Register in flight {}; registering again with the kubelet there now",
                    pool.resource, why);
        SetRegistered(pool, false);
        pool.register_failures = 0;
        Register(pool);
        continue;
      }
    }
    if (options_.metrics) options_.metrics->CountRegistration(pool.resource, s.ok());
    SetRegistered(pool, s.ok());
    if (s.ok()) {
      pool.instance = r.instance;
      pool.register_failures = 0;
      pool.retry_at = {};
      SPDLOG_INFO("registered {} with kubelet (endpoint {})", pool.resource,
                  SocketFileName(pool.resource));
      continue;
    }
    pool.register_failures++;
    auto backoff = RegisterBackoff(pool.register_failures);
    pool.retry_at = now + backoff;
    SPDLOG_ERROR("{}; retrying in {}s", s.message(), backoff.count());
  }
  for (auto& [name, pool] : pools_) CheckStream(pool, now);
}

// Served again since the Register was sent: whatever the new serving got came after it.
bool PoolRegistrations::CalledSinceRegister(const PoolRegistration& pool,
                                            uint64_t PoolServer::KubeletCalls::*count) {
  const PoolServer::KubeletCalls now = pool.server->kubelet_calls();
  const PoolServer::KubeletCalls& then = pool.calls_at_register;
  return now.serving == then.serving ? now.*count > then.*count : now.*count > 0;
}

bool PoolRegistrations::Unsettled(PoolRegistration& pool, bool streaming, Clock::time_point now) {
  if (!pool.unsettled.known()) return false;
  if (streaming || CalledSinceRegister(pool, &PoolServer::KubeletCalls::dial_backs)) {
    // kubelet reached our socket for it: it stores the plugin, then opens ListAndWatch.
    if (options_.metrics) options_.metrics->CountRegistration(pool.resource, true);
    SetRegistered(pool, true);
    pool.instance = std::exchange(pool.unsettled, {});
    SPDLOG_INFO("registered {} with kubelet (it dialled back after our Register's deadline)",
                pool.resource);
    return false;
  }
  if (!(KubeletInstanceOf(KubeletSocket()) == pool.unsettled)) {
    pool.unsettled = {};  // a new kubelet: its kubelet.sock event registers with it
    return false;
  }
  if (now < pool.unsettled_until) return true;
  SPDLOG_WARN("kubelet did not dial {} back within {} ms of a Register whose answer did not come: "
              "registering again", pool.resource, options_.dial_back_wait.count());
  pool.unsettled = {};
  Register(pool);
  return true;
}

void PoolRegistrations::CheckStream(PoolRegistration& pool, Clock::time_point now) {
  const bool streaming = pool.server->open_streams() > 0;
  if (streaming != pool.streaming) {
    if (streaming) {
      pool.streaming_since = now;
    } else if (now - pool.streaming_since > std::chrono::minutes(1)) {
      pool.stream_losses = 0;  // a stream that lived: this loss is a fresh incident
    }
    pool.streaming = streaming;
    if (options_.metrics) options_.metrics->SetStreaming(pool.resource, streaming);
  }
  // kubelet's plugin watcher dials us again on its own; in device-plugin mode only a Register
  // brings a stream back.
  if (options_.mode != RegistrationMode::kDevicePlugin) return;
  const PoolServer::KubeletCalls calls = pool.server->kubelet_calls();
  if (!(calls == pool.calls_seen)) {
    pool.calls_seen = calls;
    pool.stream_deadline = {};
  }
  if (Unsettled(pool, streaming, now) || streaming || !pool.registered) {
    pool.stream_deadline = {};
    return;
  }
  const std::chrono::milliseconds wait = StreamWait(options_.stream_wait, pool.stream_losses);
  if (pool.stream_deadline == Clock::time_point{}) {
    pool.stream_deadline = now + wait;
    pool.stream_wait_since = now;
    return;
  }
  if (now < pool.stream_deadline) return;
  // A first stream after kubelet dialled back for the Register comes from a goroutine kubelet
  // starts as it answers: late on a loaded kubelet, not lost, while kubelet holds the connection
  // it dialled back on (it closes it when it drops the plugin). Waited for, up to
  // first_stream_wait. (A stream that ended, or a Register kubelet dialled an earlier serving of
  // ours for: kubelet has dropped the plugin.)
  const bool streamed = CalledSinceRegister(pool, &PoolServer::KubeletCalls::streams);
  const bool dialled_back = CalledSinceRegister(pool, &PoolServer::KubeletCalls::dial_backs);
  if (!streamed && dialled_back && now - pool.stream_wait_since < options_.first_stream_wait) {
    StatusOr<int> held = pool.server->OpenConnections();
    if (!held.ok() || *held > 0) {
      if (!held.ok()) SPDLOG_DEBUG("{}: {}", pool.resource, held.status().message());
      pool.stream_deadline = std::min(now + wait, pool.stream_wait_since + options_.first_stream_wait);
      return;
    }
  }
  const std::string kubelet_sock = KubeletSocket();
  if (!KubeletListens(kubelet_sock) ||
      (pool.instance.known() && !(KubeletInstanceOf(kubelet_sock) == pool.instance))) {
    // The kubelet it registered with is down (a stopped kubelet leaves kubelet.sock) or gone:
    // the next kubelet's kubelet.sock appearing registers it, once.
    SPDLOG_INFO("kubelet holds no ListAndWatch stream of {} and no kubelet listens on {}: "
                "registering when a kubelet starts", pool.resource, kubelet_sock);
    SetRegistered(pool, false);
    pool.retry_at = {};
    return;
  }
  SPDLOG_WARN("kubelet holds no ListAndWatch stream of {} ({}) and opened none within {} ms: "
              "registering again", pool.resource,
              streamed ? "it ended it" : "it never opened one",
              std::chrono::duration_cast<std::chrono::milliseconds>(now - pool.stream_wait_since).count());
  pool.stream_losses++;
  SetRegistered(pool, false);
  pool.register_failures = 0;
  Register(pool);
}

void PoolRegistrations::ServeAgain(PoolRegistration& pool, Clock::time_point now) {
  SetRegistered(pool, false);
  pool.server->Stop();
  Status s = pool.server->Start();
  if (s.ok()) {
    pool.serve_retry_at = {};
    return;
  }
  // Nothing else would bring the socket back (kubelet only dials what registers): try again.
  pool.serve_retry_at = now + std::chrono::seconds(1);
  SPDLOG_ERROR("re-serve {}: {}; retrying in 1s", pool.resource, s.message());
}

void PoolRegistrations::ServeAndRegisterAgain(PoolRegistration& pool, Clock::time_point now) {
  ServeAgain(pool, now);
  pool.register_failures = 0;
  Register(pool);  // nothing while the socket could not be served, or in plugin-watcher mode
}

void PoolRegistrations::OnDirEvent(uint32_t mask, const std::string& name, Clock::time_point now) {
  const bool device_plugin = options_.mode == RegistrationMode::kDevicePlugin;
  if (device_plugin && name == kKubeletSocket) {
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
      SPDLOG_INFO("kubelet.sock created: kubelet started, registering");
      const KubeletInstance current = KubeletInstanceOf(KubeletSocket());
      for (auto& [pname, pool] : pools_) {
        if (!pool.server->SocketPresent()) ServeAgain(pool, now);
        // Our socket served again (kubelet's sweep removed it) may have registered with this
        // kubelet already, before this event was read: once per kubelet.
        if (current.known() && ((pool.registered && pool.instance == current) || pool.unsettled == current)) {
          SPDLOG_DEBUG("{} is registered with this kubelet already", pool.resource);
          continue;
        }
        pool.register_failures = 0;
        pool.stream_losses = 0;
        Register(pool);
      }
    } else {
      // A kubelet stopped with SIGTERM leaves kubelet.sock: the next kubelet removes it (with
      // every socket in the directory) when it starts, then listens on a new one.
      SPDLOG_INFO("kubelet.sock removed: a kubelet is starting (it clears its directory); "
                  "registering when its new socket appears");
      for (auto& [pname, pool] : pools_) {
        SetRegistered(pool, false);
        pool.unsettled = {};  // the kubelet that might have accepted it is going
        // A Register in flight goes on: its result decides (it may reach the new kubelet).
        if (pool.register_seq != 0) pool.recheck = true;
      }
    }
    return;
  }
  if (!(mask & (IN_DELETE | IN_MOVED_FROM))) return;
  for (auto& [pname, pool] : pools_) {
    if (SocketFileName(pool.resource) != name || pool.server->SocketPresent()) continue;
    // A kubelet starting clears its directory; `rm`, or another process, can remove it too.
    // kubelet only dials what registers: serve again now, and register again at once when
    // kubelet.sock is there (else when it appears).
    SPDLOG_INFO("{} was removed: serving {} again", name, pool.resource);
    ServeAndRegisterAgain(pool, now);
  }
}

void PoolRegistrations::OnTimer(Clock::time_point now) {
  for (auto& [name, pool] : pools_) {
    if (pool.serve_retry_at != Clock::time_point{} && now >= pool.serve_retry_at) {
      ServeAndRegisterAgain(pool, now);
    }
    if (!pool.registered && pool.retry_at != Clock::time_point{} && now >= pool.retry_at) {
      Register(pool);
    }
    CheckStream(pool, now);
  }
}

Clock::time_point PoolRegistrations::NextWakeup(Clock::time_point bound) const {
  Clock::time_point wake_at = bound;
  for (const auto& [name, pool] : pools_) {
    if (!pool.registered && pool.retry_at != Clock::time_point{}) {
      wake_at = std::min(wake_at, pool.retry_at);
    }
    if (pool.serve_retry_at != Clock::time_point{}) wake_at = std::min(wake_at, pool.serve_retry_at);
    if (pool.stream_deadline != Clock::time_point{}) wake_at = std::min(wake_at, pool.stream_deadline);
    if (pool.unsettled.known()) wake_at = std::min(wake_at, pool.unsettled_until);
  }
  return wake_at;
}

}  // namespace rdmak8s::dp
