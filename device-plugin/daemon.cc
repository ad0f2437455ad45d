#include "device-plugin/daemon.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::dp {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

Daemon::Daemon(DaemonOptions options, DaemonDeps deps)
    : options_(std::move(options)),
      has_discovery_(deps.sources.discovery != nullptr),
      deps_(std::move(deps)),
      config_watch_(options_.config_path, options_.cdi),
      watch_(std::move(deps_.sources),
             node::DeviceWatchOptions{options_.sysfs_root, options_.rescan_interval,
                                      options_.port_poll_interval},
             node::DeviceWatchHooks{
                 [this](const node::DeviceTracker&, bool rescanned) { DevicesChanged(rescanned); },
                 [metrics = deps_.metrics](std::chrono::duration<double> took) {
                   if (metrics) metrics->ObserveDiscovery(took.count());
                 },
                 nullptr}),
      publisher_(PublishOptions{options_.cdi, options_.cdi_dir, options_.dev_root, deps_.metrics,
                                deps_.netns_mode, options_.nfd_features_dir,
                                options_.node_check_results}) {}

Daemon::~Daemon() {
  if (registrations_) registrations_->Shutdown();
  {
    std::lock_guard<std::mutex> lock(pools_mu_);
    for (auto& [name, pool] : pools_) {
      if (pool.server) pool.server->Stop();
    }
    pools_.clear();
  }
  for (int fd : {epfd_, inotify_fd_, wake_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Status Daemon::Start() {
  if (!has_discovery_) return InvalidArgumentError("daemon: no discovery given");
  mode_ = ResolveRegistrationMode(options_.registration, options_.kubelet_dir,
                                  options_.plugins_registry_dir);
  registrations_ = std::make_unique<PoolRegistrations>(PoolRegistrations::Options{
      mode_, options_.kubelet_dir, options_.plugins_registry_dir, options_.register_timeout,
      deps_.metrics});
  const std::string& socket_dir = registrations_->socket_dir();
  // Modes set whatever the umask: kubelet (root) alone uses the sockets' directory; the CDI
  // specs are read by the runtime and by whoever inspects the node.
  RDMAK8S_RETURN_IF_ERROR_CTX(MakeDirs(socket_dir, 0750), "socket dir");
  if (options_.cdi) RDMAK8S_RETURN_IF_ERROR_CTX(MakeDirs(options_.cdi_dir, 0755), "CDI dir");

  RDMAK8S_ASSIGN_OR_RETURN(config_, config_watch_.Load());
  for (const auto& w : EnvConflicts(config_)) SPDLOG_WARN("config: {}", w);

  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return ErrnoError(errno, "epoll_create1");
  auto add_fd = [&](int fd) -> Status {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return ErrnoError(errno, "epoll_ctl add");
    return Status::Ok();
  };
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return ErrnoError(errno, "eventfd");
  RDMAK8S_RETURN_IF_ERROR(add_fd(wake_fd_));
  // kubelet.sock and our pools' sockets: the pools change with the config, so the filter asks
  // the pools of the moment (on this loop's thread, like every change of pools_).
  RDMAK8S_RETURN_IF_ERROR(socket_watch_.Start(socket_dir, [this](const std::string& name) {
    if (name == kKubeletSocket) return true;
    std::lock_guard<std::mutex> lock(pools_mu_);
    return std::any_of(pools_.begin(), pools_.end(),
                       [&](const auto& p) { return SocketFileName(p.second.resource) == name; });
  }));
  RDMAK8S_RETURN_IF_ERROR(add_fd(socket_watch_.fd()));
  // The config's own inotify instance: the config may sit in the socket directory, and each
  // watch then sees its own events and its own overflow.
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return ErrnoError(errno, "inotify_init1 (config watch)");
  RDMAK8S_RETURN_IF_ERROR(add_fd(inotify_fd_));
  RDMAK8S_RETURN_IF_ERROR(config_watch_.Watch(inotify_fd_));
  if (options_.handle_signals) {
    RDMAK8S_ASSIGN_OR_RETURN(node::StopSignals opened, node::StopSignals::Open());
    signals_.emplace(std::move(opened));
    RDMAK8S_RETURN_IF_ERROR(add_fd(signals_->fd()));
  }
  RDMAK8S_RETURN_IF_ERROR(registrations_->Start());
  RDMAK8S_RETURN_IF_ERROR(add_fd(registrations_->fd()));
  for (int fd : watch_.fds()) RDMAK8S_RETURN_IF_ERROR(add_fd(fd));

  // A discovery that fails as a whole is logged; the pools serve what is known, and the next
  // rescan tries again.
  if (Status s = watch_.Start(); !s.ok()) SPDLOG_ERROR("{}", s.message());
  for (const auto& cfg : config_.pools) {
    RDMAK8S_RETURN_IF_ERROR(StartPool(cfg));
  }
  RebuildPools();
  {
    std::lock_guard<std::mutex> lock(pools_mu_);
    for (auto& [name, pool] : pools_) {
      RDMAK8S_RETURN_IF_ERROR(pool.server->Start());
      SPDLOG_INFO("serving {} on {}", pool.resource, pool.server->socket_path());
    }
  }
  registrations_->RegisterAll();
  if (deps_.metrics) {
    // Run() wakes at least every rescan interval (its epoll timeout is capped at an hour): a loop
    // silent for twice that plus a minute is stuck.
    auto wakeup = std::min<std::chrono::seconds>(options_.rescan_interval, std::chrono::hours(1));
    deps_.metrics->SetStallBound(2 * wakeup + std::chrono::minutes(1));
    deps_.metrics->Heartbeat();
    deps_.metrics->SetServing(true);
  }
  return Status::Ok();
}

Status Daemon::StartPool(const PoolConfig& cfg) {
  Pool pool;
  pool.cfg = cfg;
  pool.resource = ResourceName(config_, cfg);
  PoolServer::Options so = registrations_->ServerOptions(pool.resource);
  Metrics* metrics = deps_.metrics;
  so.hooks.on_allocate = [metrics](const std::string& resource, const std::vector<std::string>&,
                                   const std::vector<std::string>&, const std::string& error) {
    if (metrics) metrics->CountAllocation(resource, error.empty());
  };
  so.hooks.before_rename = deps_.before_socket_rename;
  auto empty = std::make_shared<PoolState>();
  empty->resource = pool.resource;
  empty->pool = cfg;
  pool.server = std::make_unique<PoolServer>(std::move(so), std::move(empty));
  registrations_->Add(cfg.name, pool.resource, pool.server.get());
  std::lock_guard<std::mutex> lock(pools_mu_);
  pools_[cfg.name] = std::move(pool);
  return Status::Ok();
}

void Daemon::StopPool(const std::string& name, bool remove_cdi) {
  std::lock_guard<std::mutex> lock(pools_mu_);
  auto it = pools_.find(name);
  if (it == pools_.end()) return;
  registrations_->Remove(name);
  it->second.server->Stop();
  publisher_.Withdraw(name, it->second.resource, remove_cdi);
  SPDLOG_INFO("stopped {}", it->second.resource);
  pools_.erase(it);
}

Status Daemon::ServePool(const std::string& name) {
  Pool& pool = pools_.at(name);
  RDMAK8S_RETURN_IF_ERROR(pool.server->Start());
  SPDLOG_INFO("serving {} on {}", pool.resource, pool.server->socket_path());
  registrations_->Register(name);
  return Status::Ok();
}

void Daemon::DevicesChanged(bool rescanned) {
  // A rescan is when the node's RDMA netns mode is asked again (it changes with no event).
  if (rescanned) publisher_.RecheckNetnsMode(config_, /*pools_changed=*/false);
  RebuildPools();
}

void Daemon::RebuildPools() {
  std::lock_guard<std::mutex> lock(pools_mu_);
  std::vector<PoolPublisher::Target> targets;
  targets.reserve(pools_.size());
  for (auto& [name, pool] : pools_) targets.push_back({name, pool.resource, pool.cfg, *pool.server});
  publisher_.Publish(config_, watch_.tracker().devices(), targets);
}

void Daemon::ApplyConfig(PluginConfig cfg) {
  ConfigDiff diff = DiffConfig(config_, cfg);
  for (const auto& name : diff.stop) StopPool(name, /*remove_cdi=*/true);
  {
    std::lock_guard<std::mutex> lock(pools_mu_);
    config_ = std::move(cfg);
    for (auto& [name, pcfg] : diff.updated) {
      SPDLOG_INFO("pool {} changed: updating {} in place", name, pools_.at(name).resource);
      pools_.at(name).cfg = std::move(pcfg);
    }
  }
  std::vector<std::string> started;
  for (const auto& p : diff.start) {
    Status s = StartPool(p);
    if (!s.ok()) {
      SPDLOG_ERROR("start pool {}: {}", p.name, s.message());
      continue;
    }
    started.push_back(p.name);
  }
  // The netns-mode check depends on which pools exist.
  publisher_.RecheckNetnsMode(config_, /*pools_changed=*/true);
  RebuildPools();
  for (const auto& name : started) {
    if (Status s = ServePool(name); !s.ok()) SPDLOG_ERROR("{}", s.message());
  }
}

void Daemon::DoReload() {
  if (!config_watch_.has_file()) return;
  auto next = config_watch_.Reload(config_);
  if (deps_.metrics) deps_.metrics->CountConfigReload(next.ok());
  if (!next.ok()) {
    rejected_reloads_++;
    SPDLOG_ERROR("reload rejected, keeping the running configuration: {}", next.status().message());
    return;
  }
  if (!next->has_value()) {
    SPDLOG_DEBUG("config {} unchanged", config_watch_.path());
    return;
  }
  SPDLOG_INFO("config {} changed: applying", config_watch_.path());
  for (const auto& w : EnvConflicts(**next)) SPDLOG_WARN("config: {}", w);
  ApplyConfig(std::move(**next));
}

void Daemon::HandleInotify() {
  alignas(inotify_event) char buf[8192];
  bool overflow = false;
  while (true) {
    ssize_t n = read(inotify_fd_, buf, sizeof(buf));
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      std::string name = ev->len ? ev->name : "";
      if (ev->mask & IN_Q_OVERFLOW) overflow = true;
      if (config_watch_.Concerns(ev->wd, ev->mask, name)) DoReload();
      p += sizeof(inotify_event) + ev->len;
    }
  }
  if (overflow) {
    SPDLOG_WARN("inotify queue overflow on the config's watch: reloading {}", options_.config_path);
    DoReload();
  }
}

void Daemon::HandleSocketDir() {
  node::SocketDirWatch::Changes changes = socket_watch_.Drain();
  const auto now = SteadyClock::now();
  for (const auto& ev : changes.events) registrations_->OnDirEvent(ev.mask, ev.name, now);
  if (!changes.recheck_all) return;
  // Events were lost or the directory went or came back: look at every socket as it is now.
  SPDLOG_WARN("{}: inotify overflow, or the directory removed or back: re-checking kubelet.sock "
              "and our sockets", registrations_->socket_dir());
  std::vector<std::string> sockets;
  {
    std::lock_guard<std::mutex> lock(pools_mu_);
    for (const auto& [name, pool] : pools_) sockets.push_back(SocketFileName(pool.resource));
  }
  // Serves again the sockets that are not there (a no-op for those that are).
  for (const auto& name : sockets) registrations_->OnDirEvent(IN_DELETE, name, now);
  if (mode_ == RegistrationMode::kDevicePlugin) {
    std::error_code ec;
    const bool kubelet_there = fs::exists(registrations_->socket_dir() + "/" + kKubeletSocket, ec);
    // There: register what this kubelet has not registered; gone: unregistered until it appears.
    registrations_->OnDirEvent(kubelet_there ? IN_CREATE : IN_DELETE, kKubeletSocket, now);
  }
}

void Daemon::HandleSignal() {
  while (true) {
    StatusOr<node::ReceivedSignal> got = signals_->Read();
    if (!got.ok()) {
      SPDLOG_ERROR("{}", got.status().message());
      return;
    }
    if (got->request == node::SignalRequest::kNone) return;
    if (got->request == node::SignalRequest::kLookAgain) {
      // The operator's "look again": the config (a file inotify cannot see) and the devices.
      SPDLOG_INFO("SIGHUP: reloading {} and rescanning", options_.config_path);
      DoReload();
      watch_.Rescan();
    } else {
      SPDLOG_INFO("signal {}: shutting down", got->name());
      stop_ = true;
    }
  }
}

Status Daemon::Run() {
  epoll_event evs[16];
  while (!stop_) {
    auto now = SteadyClock::now();
    auto wake_at = registrations_->NextWakeup(watch_.NextWakeup());
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now).count();
    // With neither the socket directory nor its parent watched, no event tells the directory's
    // return: look again each second.
    const int64_t bound = socket_watch_.watching() ? 3600 * 1000 : 1000;
    int timeout = static_cast<int>(std::clamp<int64_t>(wait, 0, bound));
    int n = epoll_wait(epfd_, evs, 16, timeout);
    if (deps_.metrics) deps_.metrics->Heartbeat();
    if (n < 0 && errno != EINTR) return ErrnoError(errno, "epoll_wait");
    for (int i = 0; i < n; ++i) {
      int fd = evs[i].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        while (read(wake_fd_, &v, sizeof(v)) > 0) {
        }
      } else if (fd == inotify_fd_) {
        HandleInotify();
      } else if (fd == socket_watch_.fd()) {
        HandleSocketDir();
      } else if (signals_ && fd == signals_->fd()) {
        HandleSignal();
      } else if (fd == registrations_->fd()) {
        registrations_->HandleRegistrations(SteadyClock::now());
      } else {
        watch_.HandleReadable(fd);
      }
    }
    if (stop_) break;
    if (!socket_watch_.watching()) HandleSocketDir();  // tries to watch again
    if (reload_.exchange(false)) DoReload();
    if (rescan_.exchange(false)) {
      watch_.Rescan();
    } else {
      watch_.OnTimer(SteadyClock::now());
    }
    registrations_->OnTimer(SteadyClock::now());
  }
  if (deps_.metrics) deps_.metrics->SetServing(false);
  registrations_->Shutdown();  // cancels a Register in flight: shutting down does not wait for kubelet
  std::vector<std::string> names;
  for (const auto& [name, pool] : pools_) names.push_back(name);
  for (const auto& name : names) StopPool(name, /*remove_cdi=*/false);
  publisher_.StopAdvertising();
  SPDLOG_INFO("stopped: sockets removed");
  return Status::Ok();
}

void Daemon::Stop() {
  stop_ = true;
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
}

void Daemon::Reload() {
  reload_ = true;
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
}

void Daemon::Rescan() {
  rescan_ = true;
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
}

std::vector<std::string> Daemon::Resources() const {
  std::lock_guard<std::mutex> lock(pools_mu_);
  std::vector<std::string> out;
  for (const auto& [name, pool] : pools_) out.push_back(pool.resource);
  return out;
}

std::string Daemon::SocketPath(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(pools_mu_);
  for (const auto& [name, pool] : pools_) {
    if (pool.resource == resource) return pool.server->socket_path();
  }
  return "";
}

PluginConfig Daemon::config() const {
  std::lock_guard<std::mutex> lock(pools_mu_);
  return config_;
}

}  // namespace rdmak8s::dp
