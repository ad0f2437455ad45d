#include "device-plugin/daemon.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>

#include "device-plugin/cdi_spec.h"
#include "device-plugin/pools.h"

namespace rdmak8s::dp {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr char kKubeletSocket[] = "kubelet.sock";
constexpr char kConfigMapDataLink[] = "..data";

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

std::string Basename(const std::string& path) { return fs::path(path).filename().string(); }
std::string Dirname(const std::string& path) {
  std::string d = fs::path(path).parent_path().string();
  return d.empty() ? "." : d;
}

// Without --config: one shared pool with every RDMA device.
PluginConfig DefaultConfig() {
  PluginConfig cfg;
  PoolConfig pool;
  pool.name = "shared";
  pool.mode = PoolMode::kShared;
  cfg.pools.push_back(pool);
  return cfg;
}

}  // namespace

StatusOr<RegistrationMode> ParseRegistrationMode(std::string_view s) {
  if (s == "auto") return RegistrationMode::kAuto;
  if (s == "device-plugin") return RegistrationMode::kDevicePlugin;
  if (s == "plugin-watcher") return RegistrationMode::kPluginWatcher;
  return InvalidArgumentError("--registration " + std::string(s) +
                              ": want auto, device-plugin or plugin-watcher");
}

Daemon::Daemon(DaemonOptions options, DaemonDeps deps)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      tracker_(deps_.discovery.get(), options_.sysfs_root) {}

Daemon::~Daemon() {
  if (registrar_) registrar_->Shutdown();
  {
    std::lock_guard<std::mutex> lock(pools_mu_);
    for (auto& [name, pool] : pools_) {
      if (pool.server) pool.server->Stop();
    }
    pools_.clear();
  }
  for (int fd : {epfd_, inotify_fd_, wake_fd_, signal_fd_}) {
    if (fd >= 0) close(fd);
  }
}

std::string Daemon::SocketFileName(const std::string& resource) const {
  std::string s = "rdmak8s-" + resource + ".sock";
  std::replace(s.begin(), s.end(), '/', '-');
  return s;
}

Status Daemon::Start() {
  if (!deps_.discovery) return InvalidArgumentError("daemon: no discovery given");
  // Which registration kubelet expects.
  mode_ = options_.registration;
  if (mode_ == RegistrationMode::kAuto) {
    if (Exists(options_.kubelet_dir) || !Exists(options_.plugins_registry_dir)) {
      mode_ = RegistrationMode::kDevicePlugin;
    } else {
      mode_ = RegistrationMode::kPluginWatcher;
    }
  }
  socket_dir_ = mode_ == RegistrationMode::kDevicePlugin ? options_.kubelet_dir
                                                         : options_.plugins_registry_dir;
  std::error_code ec;
  fs::create_directories(socket_dir_, ec);
  if (ec) return InternalError("create " + socket_dir_ + ": " + ec.message());
  if (options_.cdi) {
    fs::create_directories(options_.cdi_dir, ec);
    if (ec) return InternalError("create " + options_.cdi_dir + ": " + ec.message());
  }

  if (options_.config_path.empty()) {
    config_ = DefaultConfig();
  } else {
    RDMAK8S_ASSIGN_OR_RETURN(config_, LoadConfigFile(options_.config_path));
    if (options_.cdi) {
      RDMAK8S_RETURN_IF_ERROR(ValidateForCdi(config_).Prepend("config " + options_.config_path));
    }
  }

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
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return ErrnoError(errno, "inotify_init1");
  RDMAK8S_RETURN_IF_ERROR(add_fd(inotify_fd_));
  kubelet_wd_ = inotify_add_watch(inotify_fd_, socket_dir_.c_str(),
                                  IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM);
  if (kubelet_wd_ < 0) return ErrnoError(errno, "inotify watch " + socket_dir_);
  if (!options_.config_path.empty()) {
    // Watch the directory, not the file: editors and ConfigMaps replace the file (the kubelet
    // swaps the "..data" symlink), which a watch on the old inode would never see.
    std::string dir = Dirname(options_.config_path);
    // IN_MASK_ADD: when the config sits in the socket directory this is the same inode and the
    // same watch; without it the call would replace the socket watch's mask and lose kubelet.sock
    // being created (inotify(7)).
    config_wd_ = inotify_add_watch(inotify_fd_, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_MASK_ADD);
    if (config_wd_ < 0) return ErrnoError(errno, "inotify watch " + dir);
  }
  if (options_.handle_signals) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    signal_fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd_ < 0) return ErrnoError(errno, "signalfd");
    RDMAK8S_RETURN_IF_ERROR(add_fd(signal_fd_));
  }
  registrar_ = std::make_unique<KubeletRegistrar>();
  RDMAK8S_RETURN_IF_ERROR(registrar_->Start());
  RDMAK8S_RETURN_IF_ERROR(add_fd(registrar_->fd()));
  if (deps_.link_monitor) RDMAK8S_RETURN_IF_ERROR(add_fd(deps_.link_monitor->fd()));
  if (deps_.device_events) RDMAK8S_RETURN_IF_ERROR(add_fd(deps_.device_events->fd()));
  if (deps_.uevents) RDMAK8S_RETURN_IF_ERROR(add_fd(deps_.uevents->fd()));

  FullRescan();
  std::vector<std::string> started;
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
  RegisterAll();
  next_rescan_ = SteadyClock::now() + options_.rescan_interval;
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
  PoolServer::Options so;
  so.socket_path = socket_dir_ + "/" + SocketFileName(pool.resource);
  so.plugin_watcher = mode_ == RegistrationMode::kPluginWatcher;
  Metrics* metrics = deps_.metrics;
  so.hooks.on_allocate = [metrics](const std::string& resource, const std::vector<std::string>&,
                                   const std::vector<std::string>&, const std::string& error) {
    if (metrics) metrics->CountAllocation(resource, error.empty());
  };
  so.hooks.before_rename = deps_.before_socket_rename;
  so.hooks.on_watcher_status = [metrics](const std::string& resource, bool ok, const std::string&) {
    if (!metrics) return;
    metrics->CountRegistration(resource, ok);
    metrics->SetRegistered(resource, ok);
  };
  auto empty = std::make_shared<PoolState>();
  empty->resource = pool.resource;
  empty->pool = cfg;
  pool.server = std::make_unique<PoolServer>(std::move(so), std::move(empty));
  if (metrics) metrics->SetRegistered(pool.resource, false);
  std::lock_guard<std::mutex> lock(pools_mu_);
  pools_[cfg.name] = std::move(pool);
  return Status::Ok();
}

void Daemon::StopPool(const std::string& name, bool remove_cdi) {
  std::lock_guard<std::mutex> lock(pools_mu_);
  auto it = pools_.find(name);
  if (it == pools_.end()) return;
  it->second.server->Stop();
  if (remove_cdi && options_.cdi) {
    std::error_code ec;
    fs::remove(CdiSpecPath(options_.cdi_dir, it->second.resource), ec);
  }
  if (deps_.metrics) deps_.metrics->RemovePool(it->second.resource);
  SPDLOG_INFO("stopped {}", it->second.resource);
  pools_.erase(it);
}

void Daemon::RegisterPool(Pool& pool) {
  if (mode_ != RegistrationMode::kDevicePlugin) return;  // kubelet's plugin watcher dials us
  if (pool.serve_retry_at != SteadyClock::time_point{}) return;  // not serving: after ServeAgain
  std::string kubelet_sock = options_.kubelet_dir + "/" + kKubeletSocket;
  pool.register_seq = 0;  // whatever is in flight is superseded
  if (!Exists(kubelet_sock)) {
    pool.registered = false;
    if (deps_.metrics) deps_.metrics->SetRegistered(pool.resource, false);
    pool.retry_at = {};  // waits for kubelet.sock to appear (inotify)
    SPDLOG_DEBUG("kubelet not up ({} missing): {} registers when it appears", kubelet_sock,
                 pool.resource);
    return;
  }
  // Off the loop: a kubelet.sock nobody answers on would otherwise hold SIGTERM, health updates
  // and inotify back for the whole timeout. The result comes back through HandleRegistrations.
  pool.register_seq = ++register_seq_;
  pool.retry_at = {};
  registrar_->Submit({pool.register_seq, kubelet_sock, SocketFileName(pool.resource), pool.resource,
                      options_.register_timeout});
}

void Daemon::HandleRegistrations() {
  for (auto& r : registrar_->Drain()) {
    auto it = std::find_if(pools_.begin(), pools_.end(), [&](const auto& p) {
      return p.second.resource == r.resource && p.second.register_seq == r.seq;
    });
    if (it == pools_.end()) continue;  // superseded, or the pool is gone
    Pool& pool = it->second;
    pool.register_seq = 0;
    const Status& s = r.status;
    if (deps_.metrics) {
      deps_.metrics->CountRegistration(pool.resource, s.ok());
      deps_.metrics->SetRegistered(pool.resource, s.ok());
    }
    if (s.ok()) {
      pool.registered = true;
      pool.register_failures = 0;
      pool.retry_at = {};
      SPDLOG_INFO("registered {} with kubelet (endpoint {})", pool.resource,
                   SocketFileName(pool.resource));
      continue;
    }
    pool.registered = false;
    pool.register_failures++;
    auto backoff = std::chrono::seconds(std::min(30, 1 << std::min(pool.register_failures - 1, 5)));
    pool.retry_at = SteadyClock::now() + backoff;
    SPDLOG_ERROR("{}; retrying in {}s", s.message(), backoff.count());
  }
}

void Daemon::RegisterAll() {
  for (auto& [name, pool] : pools_) RegisterPool(pool);
}

std::optional<std::string> Daemon::ExclusiveBlocker() {
  bool any_exclusive = false;
  for (const auto& p : config_.pools) any_exclusive |= p.mode == PoolMode::kExclusive;
  if (!any_exclusive) return std::nullopt;
  if (!deps_.netns_mode) return std::string("RDMA netns mode unknown (no RDMA netlink)");
  auto mode = deps_.netns_mode();
  if (!mode.ok()) return "cannot read the RDMA netns mode: " + mode.status().message();
  if (*mode == RdmaNetnsMode::kShared) {
    return std::string(
        "the node's RDMA netns mode is shared, so every pod would see every RDMA device; an "
        "exclusive pool needs `rdma system set netns exclusive`");
  }
  return std::nullopt;
}

void Daemon::FullRescan() {
  auto t0 = SteadyClock::now();
  Status s = tracker_.Rescan();
  if (deps_.metrics) {
    deps_.metrics->ObserveDiscovery(std::chrono::duration<double>(SteadyClock::now() - t0).count());
  }
  if (!s.ok()) {
    SPDLOG_ERROR("{}", s.message());
    return;
  }
  auto blocker = ExclusiveBlocker();
  if (blocker != exclusive_blocker_) {
    if (blocker) {
      SPDLOG_ERROR("exclusive pools unusable: {}", *blocker);
    } else if (exclusive_blocker_) {
      SPDLOG_INFO("RDMA netns mode is exclusive: exclusive pools usable");
    }
    exclusive_blocker_ = blocker;
  }
  WatchDeviceEvents();
  RebuildPools();
}

void Daemon::WatchDeviceEvents() {
  if (!deps_.device_events) return;
  std::vector<std::string> present = tracker_.Present();
  if (present == watched_) return;
  Status s = deps_.device_events->Watch(present);
  if (!s.ok()) {
    SPDLOG_WARN("async events: {}", s.message());
    watched_.clear();
    return;
  }
  watched_ = std::move(present);
}

void Daemon::RefreshDevice(const std::string& rdma_dev) {
  tracker_.Refresh(rdma_dev);
  RebuildPools();
}

std::shared_ptr<PoolState> Daemon::BuildState(const Pool& pool,
                                              const std::vector<std::string>& devs) {
  auto state = std::make_shared<PoolState>();
  state->resource = pool.resource;
  state->pool = pool.cfg;
  state->cdi = options_.cdi;
  state->cdi_kind = pool.resource;
  state->dev_root = options_.dev_root;
  for (const auto& name : devs) {
    TrackedDevice t = tracker_.devices().at(name);
    if (pool.cfg.mode == PoolMode::kExclusive && exclusive_blocker_ && t.health.healthy) {
      t.health = {false, *exclusive_blocker_};
    }
    state->devices[name] = std::move(t);
  }
  FillIds(*state);
  return state;
}

void Daemon::RebuildPools() {
  const auto& known = tracker_.devices();
  std::vector<RdmaDevice> all;
  all.reserve(known.size());
  for (const auto& [name, t] : known) all.push_back(t.dev);
  PoolMatch match = MatchPools(config_, all);
  if (match.warnings != overlap_warnings_) {
    for (const auto& w : match.warnings) SPDLOG_WARN("{}", w);
    overlap_warnings_ = match.warnings;
  }
  std::vector<std::pair<std::string, std::vector<uint32_t>>> counter_devs;
  std::lock_guard<std::mutex> lock(pools_mu_);
  for (auto& [name, pool] : pools_) {
    auto state = BuildState(pool, match.devices[name]);
    std::string fp = ToListAndWatch(*state).SerializeAsString();
    Metrics::PoolCounts counts;
    for (const auto& id : state->ids) {
      const TrackedDevice* t = state->ForId(id);
      (t && t->health.healthy ? counts.healthy_ids : counts.unhealthy_ids)++;
    }
    for (const auto& [dev, t] : state->devices) {
      (t.health.healthy ? counts.healthy_devices : counts.unhealthy_devices)++;
    }
    for (const auto& [dev, t] : state->devices) {
      if (t.presence != Presence::kPresent) continue;  // its counters are not the node's to read
      std::vector<uint32_t> ports;
      for (const auto& p : t.dev.ports) ports.push_back(p.port_num);
      counter_devs.emplace_back(dev, std::move(ports));
    }
    if (options_.cdi) {
      Status s = WriteFileIfChanged(CdiSpecPath(options_.cdi_dir, pool.resource), BuildCdiSpec(*state));
      if (!s.ok()) SPDLOG_ERROR("CDI spec for {}: {}", pool.resource, s.message());
    }
    if (deps_.metrics) deps_.metrics->SetPoolDevices(pool.resource, counts);
    bool changed = fp != pool.fingerprint;
    pool.fingerprint = std::move(fp);
    pool.state = state;
    pool.server->Publish(std::move(state), changed);
    if (changed) {
      SPDLOG_DEBUG("{}: {} healthy, {} unhealthy devices ({} / {} IDs)", pool.resource,
                   counts.healthy_devices, counts.unhealthy_devices, counts.healthy_ids,
                   counts.unhealthy_ids);
    }
  }
  if (deps_.metrics) deps_.metrics->SetCounterDevices(std::move(counter_devs));
}

void Daemon::ApplyConfig(PluginConfig cfg) {
  // A pool keeps its server (and kubelet its ListAndWatch stream) when its resource and mode
  // stay: capacity, selectors and allocate options reach kubelet as a new device list on the open
  // stream (RebuildPools below). kubelet marks every device of a resource Unhealthy when its
  // stream ends, so restarting the server for such a change would flap the whole pool.
  std::vector<std::string> to_stop;
  std::map<std::string, PoolConfig> updated;
  for (const auto& [name, pool] : pools_) {
    auto it = std::find_if(cfg.pools.begin(), cfg.pools.end(),
                           [&](const PoolConfig& p) { return p.name == name; });
    if (it == cfg.pools.end() || it->mode != pool.cfg.mode ||
        ResourceName(cfg, *it) != pool.resource) {
      to_stop.push_back(name);
    } else if (!(*it == pool.cfg)) {
      updated[name] = *it;
    }
  }
  for (const auto& name : to_stop) StopPool(name, /*remove_cdi=*/true);
  {
    std::lock_guard<std::mutex> lock(pools_mu_);
    config_ = std::move(cfg);
    for (auto& [name, pcfg] : updated) {
      SPDLOG_INFO("pool {} changed: updating {} in place", name, pools_.at(name).resource);
      pools_.at(name).cfg = std::move(pcfg);
    }
  }
  std::vector<std::string> started;
  for (const auto& p : config_.pools) {
    if (pools_.count(p.name)) continue;
    Status s = StartPool(p);
    if (!s.ok()) {
      SPDLOG_ERROR("start pool {}: {}", p.name, s.message());
      continue;
    }
    started.push_back(p.name);
  }
  // The netns-mode check depends on which pools exist.
  exclusive_blocker_ = ExclusiveBlocker();
  if (exclusive_blocker_) SPDLOG_ERROR("exclusive pools unusable: {}", *exclusive_blocker_);
  RebuildPools();
  for (const auto& name : started) {
    Pool& pool = pools_.at(name);
    Status s = pool.server->Start();
    if (!s.ok()) {
      SPDLOG_ERROR("{}", s.message());
      continue;
    }
    SPDLOG_INFO("serving {} on {}", pool.resource, pool.server->socket_path());
    RegisterPool(pool);
  }
}

void Daemon::DoReload() {
  if (options_.config_path.empty()) return;
  auto cfg = LoadConfigFile(options_.config_path);
  if (cfg.ok() && options_.cdi) {
    if (Status s = ValidateForCdi(*cfg); !s.ok()) cfg = s.Prepend("config " + options_.config_path);
  }
  if (!cfg.ok()) {
    rejected_reloads_++;
    if (deps_.metrics) deps_.metrics->CountConfigReload(false);
    SPDLOG_ERROR("reload rejected, keeping the running configuration: {}", cfg.status().message());
    return;
  }
  if (deps_.metrics) deps_.metrics->CountConfigReload(true);
  if (*cfg == config_) {
    SPDLOG_DEBUG("config {} unchanged", options_.config_path);
    return;
  }
  SPDLOG_INFO("config {} changed: applying", options_.config_path);
  for (const auto& w : EnvConflicts(*cfg)) SPDLOG_WARN("config: {}", w);
  ApplyConfig(std::move(cfg).value());
}

void Daemon::ServeAgain(Pool& pool) {
  pool.registered = false;
  if (deps_.metrics) deps_.metrics->SetRegistered(pool.resource, false);
  pool.server->Stop();
  Status s = pool.server->Start();
  if (s.ok()) {
    pool.serve_retry_at = {};
    return;
  }
  // Nothing else would bring the socket back (kubelet only dials what registers): try again.
  pool.serve_retry_at = SteadyClock::now() + std::chrono::seconds(1);
  SPDLOG_ERROR("re-serve {}: {}; retrying in 1s", pool.resource, s.message());
}

void Daemon::OnKubeletDirEvent(uint32_t mask, const std::string& name) {
  if (mode_ == RegistrationMode::kDevicePlugin && name == kKubeletSocket) {
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
      SPDLOG_INFO("kubelet.sock created: kubelet started, registering");
      for (auto& [pname, pool] : pools_) {
        if (!pool.server->SocketPresent()) ServeAgain(pool);
        pool.register_failures = 0;
        RegisterPool(pool);
      }
    } else {
      // A kubelet stopped with SIGTERM leaves kubelet.sock: the next kubelet removes it (with
      // every socket in the directory) when it starts, then listens on a new one.
      SPDLOG_INFO("kubelet.sock removed: a kubelet is starting (it clears its directory); "
                  "registering when its new socket appears");
      for (auto& [pname, pool] : pools_) {
        pool.registered = false;
        pool.register_seq = 0;
        if (deps_.metrics) deps_.metrics->SetRegistered(pool.resource, false);
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
    ServeAgain(pool);
    if (mode_ == RegistrationMode::kDevicePlugin) {
      pool.register_failures = 0;
      RegisterPool(pool);
    }
  }
}

void Daemon::OnConfigDirEvent(const std::string& name) {
  if (name == Basename(options_.config_path) || name == kConfigMapDataLink) DoReload();
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
      if (ev->wd == kubelet_wd_) OnKubeletDirEvent(ev->mask, name);
      // Same directory for both is possible: a config next to the sockets.
      if (ev->wd == config_wd_ && (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO))) OnConfigDirEvent(name);
      p += sizeof(inotify_event) + ev->len;
    }
  }
  if (overflow) {
    SPDLOG_WARN("inotify queue overflow: re-checking sockets, config and registration");
    OnKubeletDirEvent(IN_CREATE, kKubeletSocket);
    DoReload();
  }
}

void Daemon::HandleSignal() {
  signalfd_siginfo si{};
  while (read(signal_fd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
    if (si.ssi_signo == SIGHUP) {
      SPDLOG_INFO("SIGHUP: reloading {}", options_.config_path);
      DoReload();
    } else {
      SPDLOG_INFO("signal {}: shutting down", strsignal(static_cast<int>(si.ssi_signo)));
      stop_ = true;
    }
  }
}

void Daemon::HandleLinkEvents() {
  std::set<std::string> ports_only, reread;
  std::vector<std::string> unknown;
  Status s = deps_.link_monitor->ReadEvents([&](const LinkEvent& ev) {
    std::vector<std::string> on = tracker_.DevicesOnNetdev(ev.link.name);
    ports_only.insert(on.begin(), on.end());
    if (on.empty() && ev.type == LinkEvent::Type::kNew) unknown.push_back(ev.link.name);
  });
  if (!s.ok()) {
    SPDLOG_WARN("link events: {}: full rescan", s.message());
    FullRescan();
    return;
  }
  // A netdev nobody tracks (every pod's veth) is read for the RDMA devices it may bring (a
  // hot-plugged function), and only those: no rescan, no verbs context reopened.
  for (const auto& n : unknown) {
    for (auto& d : tracker_.RdmaDevicesOfNetdev(n)) reread.insert(std::move(d));
  }
  // A link event changes link and port state, not the device's shape: re-read just those
  // (a device that vanished or reads oddly gets the full re-read).
  for (const auto& d : ports_only) {
    if (reread.count(d)) continue;
    if (Status ps = tracker_.RefreshPorts(d); !ps.ok()) {
      SPDLOG_DEBUG("{}: full re-read", ps.message());
      reread.insert(d);
    }
  }
  for (const auto& d : reread) tracker_.Refresh(d);
  if (ports_only.empty() && reread.empty()) return;
  RebuildPools();
  if (!reread.empty()) WatchDeviceEvents();  // a device that came (back) gets its async events
}

void Daemon::HandleDeviceEvents() {
  std::set<std::string> devs;
  bool fatal = false;
  Status s = deps_.device_events->ReadEvents([&](const DeviceEvent& ev) {
    SPDLOG_INFO("async event on {} port {}: {}", ev.rdma_dev, ev.port_num, ev.what);
    devs.insert(ev.rdma_dev);
    fatal |= ev.what == "device fatal" || ev.what == "local catastrophic error";
  });
  if (!s.ok()) SPDLOG_WARN("async events: {}", s.message());
  if (fatal) {
    watched_.clear();  // the source dropped the fatal device's context: let it reopen what is back
    FullRescan();
    return;
  }
  for (const auto& d : devs) RefreshDevice(d);
}

void Daemon::HandleUevents() {
  std::vector<DeviceEvent> evs;
  Status s = deps_.uevents->ReadEvents([&](const DeviceEvent& ev) { evs.push_back(ev); });
  if (!s.ok()) {
    // Lost events (ENOBUFS): only a full rescan knows what changed.
    SPDLOG_WARN("uevents: {}: full rescan", s.message());
    FullRescan();
    return;
  }
  for (const auto& ev : evs) {
    SPDLOG_INFO("{} {} (uevent)", ev.rdma_dev, ev.what);
    if (ev.what == "unregistered") {
      tracker_.Unregistered(ev.rdma_dev);
    } else {
      tracker_.Refresh(ev.rdma_dev);
    }
  }
  if (evs.empty()) return;
  RebuildPools();
  WatchDeviceEvents();  // published first; then a new device's async events, none of a gone one
}

Status Daemon::Run() {
  epoll_event evs[16];
  while (!stop_) {
    auto now = SteadyClock::now();
    auto wake_at = next_rescan_;
    for (const auto& [name, pool] : pools_) {
      if (!pool.registered && pool.retry_at != SteadyClock::time_point{}) {
        wake_at = std::min(wake_at, pool.retry_at);
      }
      if (pool.serve_retry_at != SteadyClock::time_point{}) {
        wake_at = std::min(wake_at, pool.serve_retry_at);
      }
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now).count();
    int timeout = static_cast<int>(std::clamp<int64_t>(wait, 0, 3600 * 1000));
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
      } else if (fd == signal_fd_) {
        HandleSignal();
      } else if (registrar_ && fd == registrar_->fd()) {
        HandleRegistrations();
      } else if (deps_.link_monitor && fd == deps_.link_monitor->fd()) {
        HandleLinkEvents();
      } else if (deps_.device_events && fd == deps_.device_events->fd()) {
        HandleDeviceEvents();
      } else if (deps_.uevents && fd == deps_.uevents->fd()) {
        HandleUevents();
      }
    }
    if (stop_) break;
    if (reload_.exchange(false)) DoReload();
    now = SteadyClock::now();
    if (rescan_.exchange(false) || now >= next_rescan_) {
      FullRescan();
      next_rescan_ = SteadyClock::now() + options_.rescan_interval;
    }
    for (auto& [name, pool] : pools_) {
      if (pool.serve_retry_at != SteadyClock::time_point{} &&
          SteadyClock::now() >= pool.serve_retry_at) {
        ServeAgain(pool);
        if (pool.serve_retry_at == SteadyClock::time_point{} &&
            mode_ == RegistrationMode::kDevicePlugin) {
          pool.register_failures = 0;
          RegisterPool(pool);
        }
      }
      if (!pool.registered && pool.retry_at != SteadyClock::time_point{} &&
          SteadyClock::now() >= pool.retry_at) {
        RegisterPool(pool);
      }
    }
  }
  if (deps_.metrics) deps_.metrics->SetServing(false);
  registrar_->Shutdown();  // cancels a Register in flight: shutting down does not wait for kubelet
  std::vector<std::string> names;
  for (const auto& [name, pool] : pools_) names.push_back(name);
  for (const auto& name : names) StopPool(name, /*remove_cdi=*/false);
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
