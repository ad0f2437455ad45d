#include "device-plugin/kubelet_link.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <grpcpp/create_channel_posix.h>

#include <spdlog/spdlog.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace rdmak8s::dp {

namespace {

using Clock = KubeletLink::Clock;

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

StatusOr<RegistrationMode> ParseRegistrationMode(std::string_view s) {
  if (s == "auto") return RegistrationMode::kAuto;
  if (s == "device-plugin") return RegistrationMode::kDevicePlugin;
  if (s == "plugin-watcher") return RegistrationMode::kPluginWatcher;
  return InvalidArgumentError("--registration " + std::string(s) +
                              ": want auto, device-plugin or plugin-watcher");
}

RegistrationMode ResolveRegistrationMode(RegistrationMode requested, const std::string& kubelet_dir,
                                         const std::string& plugins_registry_dir) {
  if (requested != RegistrationMode::kAuto) return requested;
  if (Exists(kubelet_dir) || !Exists(plugins_registry_dir)) return RegistrationMode::kDevicePlugin;
  return RegistrationMode::kPluginWatcher;
}

std::string SocketFileName(const std::string& resource) {
  std::string s = "rdmak8s-" + resource + ".sock";
  std::replace(s.begin(), s.end(), '/', '-');
  return s;
}

std::chrono::seconds RegisterBackoff(int failures) {
  return std::chrono::seconds(std::min(30, 1 << std::min(failures - 1, 5)));
}

std::chrono::milliseconds StreamWait(std::chrono::milliseconds first, int losses) {
  const std::chrono::milliseconds cap = std::max<std::chrono::milliseconds>(first, std::chrono::seconds(30));
  std::chrono::milliseconds wait = first;
  for (int i = 0; i < losses && wait < cap; ++i) wait *= 2;
  return std::min(wait, cap);
}

KubeletInstance KubeletInstanceOf(const std::string& kubelet_socket) {
  struct stat st {};
  if (lstat(kubelet_socket.c_str(), &st) != 0) return {};
  return KubeletInstance{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                         static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

RegisterCancellation::RegisterCancellation()
    : event_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

RegisterCancellation::~RegisterCancellation() {
  if (event_fd_ >= 0) close(event_fd_);
}

void RegisterCancellation::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  if (call_ != nullptr) call_->TryCancel();
  uint64_t one = 1;
  if (event_fd_ >= 0) (void)!write(event_fd_, &one, sizeof(one));
}

bool RegisterCancellation::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool RegisterCancellation::SetCall(grpc::ClientContext* ctx, const KubeletInstance& instance) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx != nullptr && cancelled_) return false;
  call_ = ctx;
  if (ctx != nullptr) instance_ = instance;
  return true;
}

bool RegisterCancellation::in_call() const {
  std::lock_guard<std::mutex> lock(mu_);
  return call_ != nullptr;
}

KubeletInstance RegisterCancellation::instance() const {
  std::lock_guard<std::mutex> lock(mu_);
  return instance_;
}

namespace {

enum class Wake { kReady, kDeadline, kCancelled };

// Waits until `fd` (-1: none) is readable or hung up, `cancel` fires, or `deadline` passes.
Wake WaitFor(int fd, RegisterCancellation* cancel, Clock::time_point deadline) {
  while (true) {
    if (cancel != nullptr && cancel->cancelled()) return Wake::kCancelled;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Wake::kDeadline;
    pollfd p[2] = {{fd, POLLIN, 0}, {cancel != nullptr ? cancel->fd() : -1, POLLIN, 0}};
    int n = poll(p, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n > 0 && p[0].revents != 0) return Wake::kReady;
  }
}

// A unix stream socket connected to `path`, or -1 with `*err` set. Non-blocking: a listener
// whose backlog is full (a kubelet that does not accept) is EAGAIN, tried again, not a hang.
int ConnectUnix(const std::string& path, int* err) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    *err = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *err = errno;
    close(fd);
    return -1;
  }
  return fd;
}

// The Register call on `fd`, a connection kubelet has spoken on; the channel owns `fd` and closes
// it when it goes, at the end of this call.
Status CallRegister(int fd, const std::string& endpoint, const std::string& resource,
                    Clock::time_point deadline, const KubeletInstance& instance,
                    RegisterCancellation* cancel) {
  auto channel = grpc::CreateCustomInsecureChannelFromFd("localhost", fd, grpc::ChannelArguments());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version(kDevicePluginVersion);
  req.set_endpoint(endpoint);
  req.set_resource_name(resource);
  req.mutable_options()->set_pre_start_required(false);
  req.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + (deadline - Clock::now()));
  if (cancel != nullptr && !cancel->SetCall(&ctx, instance)) return InternalError("cancelled");
  grpc::Status s = stub->Register(&ctx, req, &resp);
  if (cancel != nullptr) cancel->SetCall(nullptr);
  if (s.ok()) return Status::Ok();
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return DeadlineExceededError(s.error_message());
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) return UnavailableError(s.error_message());
  return InternalError(s.error_message());
}

}  // namespace

Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                           const std::string& resource, std::chrono::milliseconds timeout,
                           RegisterCancellation* cancel) {
  const std::string what = "register " + resource + " with kubelet " + kubelet_socket;
  const Clock::time_point deadline = Clock::now() + timeout;
  // Our own connection, not a gRPC channel's: a channel cancelled or dropped just as its
  // subchannel connects leaks that connection in gRPC 1.51 (an fd whose peer is gone, forever).
  // A starting kubelet refuses connects between its bind and its listen (and its new
  // kubelet.sock may briefly be missing): retry within milliseconds.
  std::chrono::milliseconds backoff{10};
  std::string last = "no connection";
  while (true) {
    int err = 0;
    // The kubelet connected to: the socket file's instance when it was the same just before and
    // just after the connect (a kubelet replacing it in between leaves it unknown).
    const KubeletInstance before = KubeletInstanceOf(kubelet_socket);
    int fd = ConnectUnix(kubelet_socket, &err);
    KubeletInstance instance = KubeletInstanceOf(kubelet_socket);
    if (!(instance == before)) instance = {};
    if (fd >= 0) {
      // An HTTP/2 server speaks first (its SETTINGS). A connection closed before that, a kubelet
      // going away, never saw our Register: try a new one. (As gRPC's channels wait for SETTINGS.)
      Wake w = WaitFor(fd, cancel, deadline);
      char byte;
      if (w == Wake::kReady && recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 1) {
        return CallRegister(fd, endpoint, resource, deadline, instance, cancel).Prepend(what);
      }
      close(fd);
      if (w == Wake::kCancelled) return InternalError("cancelled").Prepend(what);
      if (w == Wake::kDeadline) return DeadlineExceededError("kubelet did not answer").Prepend(what);
      last = "connection closed before kubelet answered";
    } else {
      last = std::string("connect: ") + std::strerror(err);
    }
    Wake w = WaitFor(-1, cancel, std::min(deadline, Clock::now() + backoff));
    if (w == Wake::kCancelled) return InternalError("cancelled").Prepend(what);
    if (Clock::now() >= deadline) return DeadlineExceededError(last).Prepend(what);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

KubeletRegistrar::KubeletRegistrar() = default;

KubeletRegistrar::~KubeletRegistrar() {
  Shutdown();
  if (event_fd_ >= 0) close(event_fd_);
}

Status KubeletRegistrar::Start() {
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return ErrnoError(errno, "registrar eventfd");
  worker_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void KubeletRegistrar::Submit(Request request) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(queue_, [&](const Request& r) { return r.resource == request.resource; });
  queue_.push_back(std::move(request));
  cv_.notify_all();
}

bool KubeletRegistrar::Supersede(const std::string& resource, const KubeletInstance& current) {
  std::lock_guard<std::mutex> lock(mu_);
  if (inflight_cancel_ == nullptr || inflight_resource_ != resource) return true;
  // In its call on the kubelet there now: kubelet may have it already (it dials us back inside
  // the call). Anything else (connecting, waiting for kubelet's first frame, or in a call on a
  // kubelet that has gone) no kubelet we care about has seen.
  if (inflight_cancel_->in_call() && current.known() && inflight_cancel_->instance() == current) {
    return false;
  }
  inflight_cancel_->Cancel();
  return true;
}

void KubeletRegistrar::Wake() const {
  uint64_t one = 1;
  if (event_fd_ >= 0) (void)!write(event_fd_, &one, sizeof(one));
}

std::vector<KubeletRegistrar::Result> KubeletRegistrar::Drain() {
  uint64_t v;
  while (read(event_fd_, &v, sizeof(v)) > 0) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Result> out;
  out.swap(results_);
  return out;
}

void KubeletRegistrar::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
    if (inflight_cancel_ != nullptr) inflight_cancel_->Cancel();
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

void KubeletRegistrar::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Request req = std::move(queue_.front());
    queue_.erase(queue_.begin());
    RegisterCancellation cancel;
    inflight_cancel_ = &cancel;
    inflight_resource_ = req.resource;
    lock.unlock();
    Status s = RegisterWithKubelet(req.kubelet_socket, req.endpoint, req.resource, req.timeout, &cancel);
    lock.lock();
    inflight_cancel_ = nullptr;
    inflight_resource_.clear();
    results_.push_back(Result{req.seq, req.resource, std::move(s), cancel.instance()});
    uint64_t one = 1;
    (void)!write(event_fd_, &one, sizeof(one));
  }
}

KubeletLink::KubeletLink(Options options)
    : options_(std::move(options)),
      socket_dir_(options_.mode == RegistrationMode::kPluginWatcher ? options_.plugins_registry_dir
                                                                    : options_.kubelet_dir) {}

KubeletLink::~KubeletLink() { Shutdown(); }

Status KubeletLink::Start() { return registrar_.Start(); }

void KubeletLink::Shutdown() { registrar_.Shutdown(); }

PoolServer::Options KubeletLink::ServerOptions(const std::string& resource) const {
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
  so.hooks.on_streams_changed = [registrar] { registrar->Wake(); };
  return so;
}

void KubeletLink::Add(const std::string& pool, const std::string& resource, PoolServer* server) {
  PoolLink link;
  link.resource = resource;
  link.server = server;
  if (options_.metrics) {
    options_.metrics->SetRegistered(resource, false);
    options_.metrics->SetStreaming(resource, false);
  }
  pools_[pool] = std::move(link);
}

void KubeletLink::Remove(const std::string& pool) { pools_.erase(pool); }

const KubeletLink::PoolLink* KubeletLink::pool(const std::string& name) const {
  auto it = pools_.find(name);
  return it == pools_.end() ? nullptr : &it->second;
}

void KubeletLink::SetRegistered(PoolLink& pool, bool registered) {
  pool.registered = registered;
  if (!registered) {
    pool.instance = {};
    pool.stream_deadline = {};
  }
  if (options_.metrics) options_.metrics->SetRegistered(pool.resource, registered);
}

void KubeletLink::Register(const std::string& pool) {
  auto it = pools_.find(pool);
  if (it != pools_.end()) Register(it->second);
}

void KubeletLink::RegisterAll() {
  for (auto& [name, pool] : pools_) Register(pool);
}

void KubeletLink::Register(PoolLink& pool) {
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
  registrar_.Submit({pool.register_seq, kubelet_sock, SocketFileName(pool.resource), pool.resource,
                     options_.register_timeout});
}

void KubeletLink::HandleRegistrations(Clock::time_point now) {
  for (auto& r : registrar_.Drain()) {
    auto it = std::find_if(pools_.begin(), pools_.end(), [&](const auto& p) {
      return p.second.resource == r.resource && p.second.register_seq == r.seq;
    });
    if (it == pools_.end()) continue;  // superseded, or the pool is gone
    PoolLink& pool = it->second;
    pool.register_seq = 0;
    const Status& s = r.status;
    if (std::exchange(pool.recheck, false)) {
      // Asked again while this one was in flight (kubelet restarted, our socket was served
      // again): it stands only if the kubelet there now accepted it.
      const KubeletInstance current = KubeletInstanceOf(KubeletSocket());
      if (!(s.ok() && r.instance.known() && r.instance == current)) {
        if (s.ok() && options_.metrics) options_.metrics->CountRegistration(pool.resource, true);
        SPDLOG_INFO("{}: the Register in flight {}; registering again with the kubelet there now",
                    pool.resource, s.ok() ? "reached a kubelet that has gone" : "ended: " + s.message());
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

void KubeletLink::CheckStream(PoolLink& pool, Clock::time_point now) {
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
  if (options_.mode != RegistrationMode::kDevicePlugin || streaming || !pool.registered) {
    pool.stream_deadline = {};
    return;
  }
  if (pool.stream_deadline == Clock::time_point{}) {
    pool.stream_deadline = now + StreamWait(options_.stream_wait, pool.stream_losses);
    return;
  }
  if (now < pool.stream_deadline) return;
  SPDLOG_WARN("kubelet holds no ListAndWatch stream of {} (it ended it, or never opened one) and "
              "opened none within {} ms: registering again", pool.resource,
              StreamWait(options_.stream_wait, pool.stream_losses).count());
  pool.stream_losses++;
  SetRegistered(pool, false);
  pool.register_failures = 0;
  Register(pool);
}

void KubeletLink::ServeAgain(PoolLink& pool, Clock::time_point now) {
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

void KubeletLink::ServeAndRegisterAgain(PoolLink& pool, Clock::time_point now) {
  ServeAgain(pool, now);
  pool.register_failures = 0;
  Register(pool);  // nothing while the socket could not be served, or in plugin-watcher mode
}

void KubeletLink::OnDirEvent(uint32_t mask, const std::string& name, Clock::time_point now) {
  const bool device_plugin = options_.mode == RegistrationMode::kDevicePlugin;
  if (device_plugin && name == kKubeletSocket) {
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
      SPDLOG_INFO("kubelet.sock created: kubelet started, registering");
      const KubeletInstance current = KubeletInstanceOf(KubeletSocket());
      for (auto& [pname, pool] : pools_) {
        if (!pool.server->SocketPresent()) ServeAgain(pool, now);
        // Our socket served again (kubelet's sweep removed it) may have registered with this
        // kubelet already, before this event was read: once per kubelet.
        if (pool.registered && current.known() && pool.instance == current) {
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

void KubeletLink::OnTimer(Clock::time_point now) {
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

Clock::time_point KubeletLink::NextWakeup(Clock::time_point bound) const {
  Clock::time_point wake_at = bound;
  for (const auto& [name, pool] : pools_) {
    if (!pool.registered && pool.retry_at != Clock::time_point{}) {
      wake_at = std::min(wake_at, pool.retry_at);
    }
    if (pool.serve_retry_at != Clock::time_point{}) wake_at = std::min(wake_at, pool.serve_retry_at);
    if (pool.stream_deadline != Clock::time_point{}) wake_at = std::min(wake_at, pool.stream_deadline);
  }
  return wake_at;
}

}  // namespace rdmak8s::dp
