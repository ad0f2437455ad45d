#include "fakes/fake_dra_kubelet.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <ctime>
#include <filesystem>

#include "dra/v1beta1/api.grpc.pb.h"
#include "support/kubelet_get_info.h"

namespace rdmak8s::fake {

namespace {

namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

constexpr char kV1[] = "v1.DRAPlugin";
constexpr char kV1beta1[] = "v1beta1.DRAPlugin";
constexpr char kHealth[] = "v1alpha1.DRAResourceHealth";
// kubelet's DRA plugin client: every call under defaultClientCallTimeout (real-peers.md).
constexpr auto kCallTimeout = std::chrono::seconds(45);

Status FromGrpcStatus(const grpc::Status& s, const std::string& what) {
  return UnavailableError(what + ": " + s.error_message() + " (gRPC code " +
                          std::to_string(static_cast<int>(s.error_code())) + ")");
}

void Deadline(grpc::ClientContext& ctx) {
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
}

template <class Req>
Req RequestOf(const std::vector<DraClaim>& claims) {
  Req req;
  for (const auto& c : claims) {
    auto* m = req.add_claims();
    m->set_namespace_(c.namespace_name);
    m->set_uid(c.uid);
    m->set_name(c.name);
  }
  return req;
}

// A v1beta1 message read as its v1 twin, through the wire.
template <class To, class From>
StatusOr<To> Rewire(const From& from) {
  To to;
  if (!to.ParseFromString(from.SerializeAsString())) {
    return InternalError("v1beta1 answer does not parse as v1");
  }
  return to;
}

}  // namespace

FakeDraKubelet::~FakeDraKubelet() { Disconnect(); }

StatusOr<pluginregistration::PluginInfo> FakeDraKubelet::Register(const std::string& socket) {
  auto reg_channel = grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials());
  auto reg = pluginregistration::Registration::NewStub(reg_channel);
  pluginregistration::PluginInfo info;
  if (grpc::Status s = KubeletGetInfo(*reg, &info); !s.ok()) return FromGrpcStatus(s, "GetInfo on " + socket);
  auto notify = [&](bool ok, const std::string& error) {
    pluginregistration::RegistrationStatus st;
    st.set_plugin_registered(ok);
    st.set_error(error);
    pluginregistration::RegistrationStatusResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kNotifyTimeout);
    return reg->NotifyRegistrationStatus(&ctx, st, &resp);
  };
  std::string chosen;
  for (const auto& v : info.supported_versions()) {
    if (v == kV1 || v == kV1beta1) {
      chosen = v;
      break;
    }
  }
  std::string why;
  if (info.type() != "DRAPlugin") why = "plugin type \"" + info.type() + "\" is not DRAPlugin";
  if (why.empty() && chosen.empty()) why = "none of the plugin's services is one kubelet supports";
  if (!why.empty()) {
    (void)notify(false, why);
    return FailedPreconditionError("register " + socket + ": " + why);
  }
  auto channel = grpc::CreateChannel("unix://" + info.endpoint(), grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5))) {
    (void)notify(false, "cannot connect to " + info.endpoint());
    return UnavailableError("register " + socket + ": endpoint " + info.endpoint() + " not serving");
  }
  if (grpc::Status s = notify(true, ""); !s.ok()) return FromGrpcStatus(s, "NotifyRegistrationStatus");
  Disconnect();
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel_ = channel;
    chosen_ = chosen;
  }
  const auto& versions = info.supported_versions();
  if (std::find(versions.begin(), versions.end(), kHealth) != versions.end()) {
    std::lock_guard<std::mutex> lock(mu_);
    health_ctx_ = std::make_unique<grpc::ClientContext>();
    health_thread_ = std::thread([this] { HealthLoop(); });
  }
  return info;
}

std::string FakeDraKubelet::chosen_service() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chosen_;
}

void FakeDraKubelet::HealthLoop() {
  std::shared_ptr<grpc::Channel> channel;
  grpc::ClientContext* ctx;
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel = channel_;
    ctx = health_ctx_.get();
  }
  auto stub = v1alpha1::DRAResourceHealth::NewStub(channel);
  auto reader = stub->NodeWatchResources(ctx, v1alpha1::NodeWatchResourcesRequest());
  v1alpha1::NodeWatchResourcesResponse msg;
  while (reader->Read(&msg)) {
    std::lock_guard<std::mutex> lock(mu_);
    latest_health_ = msg;
    for (const auto& d : msg.devices()) {
      health_cache_[d.device().pool_name() + "/" + d.device().device_name()] = {
          d.health(), d.last_updated_time(), d.health_check_timeout_seconds(), d.message()};
    }
    latest_health_at_ = std::chrono::steady_clock::now();
    if (!first_health_at_) first_health_at_ = latest_health_at_;
    ++health_count_;
    cv_.notify_all();
  }
  (void)reader->Finish();
}

std::optional<v1alpha1::NodeWatchResourcesResponse> FakeDraKubelet::WaitForHealth(
    const std::function<bool(const v1alpha1::NodeWatchResourcesResponse&)>& pred,
    std::chrono::steady_clock::duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  bool ok = cv_.wait_for(lock, timeout, [&] { return latest_health_ && pred(*latest_health_); });
  if (!ok) return std::nullopt;
  return latest_health_;
}

v1alpha1::HealthStatus FakeDraKubelet::HealthOfLocked(const std::string& key, int64_t now_unix) const {
  auto it = health_cache_.find(key);
  if (it == health_cache_.end()) return v1alpha1::UNKNOWN;
  // kubelet: a timeout of 0 or less means its default.
  const int64_t timeout = it->second.timeout_seconds > 0 ? it->second.timeout_seconds
                                                         : health_timeout_.count();
  if (now_unix == 0) now_unix = static_cast<int64_t>(std::time(nullptr));
  if (now_unix - it->second.last_updated > timeout) return v1alpha1::UNKNOWN;
  return it->second.health;
}

v1alpha1::HealthStatus FakeDraKubelet::HealthOf(const std::string& pool, const std::string& device,
                                                int64_t now_unix) const {
  std::lock_guard<std::mutex> lock(mu_);
  return HealthOfLocked(pool + "/" + device, now_unix);
}

std::string FakeDraKubelet::HealthMessageOf(const std::string& pool, const std::string& device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = health_cache_.find(pool + "/" + device);
  return it == health_cache_.end() ? "" : it->second.message;
}

bool FakeDraKubelet::WaitForHealthPast(std::chrono::seconds after,
                                       const std::function<bool(const FakeDraKubelet&)>& pred,
                                       std::chrono::steady_clock::duration timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  size_t seen = 0;
  while (true) {
    if (health_count_ != seen && first_health_at_ && latest_health_at_ - *first_health_at_ >= after) {
      seen = health_count_;
      lock.unlock();
      // pred reads through HealthOf (which locks); a message arriving meanwhile is newer still.
      if (pred(*this)) return true;
      lock.lock();
    }
    seen = health_count_;
    if (!cv_.wait_until(lock, deadline, [&] { return health_count_ != seen; })) return false;
  }
}

size_t FakeDraKubelet::health_messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_count_;
}

std::vector<std::string> CdiDevicesForRequest(const v1::NodePrepareResourceResponse& claim,
                                              const std::string& request) {
  std::vector<std::string> out;
  for (const auto& d : claim.devices()) {
    const auto& names = d.request_names();
    if (!names.empty() && std::find(names.begin(), names.end(), request) == names.end()) continue;
    out.insert(out.end(), d.cdi_device_ids().begin(), d.cdi_device_ids().end());
  }
  return out;
}

void FakeDraKubelet::Disconnect() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_ctx_) health_ctx_->TryCancel();
    t = std::move(health_thread_);
  }
  if (t.joinable()) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  health_ctx_.reset();
  channel_.reset();
  chosen_.clear();
  health_cache_.clear();
  first_health_at_.reset();
}

namespace {

// One DRA call (`method`) on `channel`: v1's, or v1beta1's with its answer rewired to v1's
// message (the two are the same on the wire).
template <class V1Req, class V1Resp, class BetaReq, class BetaResp>
StatusOr<V1Resp> CallDra(const std::shared_ptr<grpc::Channel>& channel, bool use_v1,
                         const std::vector<DraClaim>& claims, const std::string& method,
                         grpc::Status (v1::DRAPlugin::Stub::*v1_call)(grpc::ClientContext*,
                                                                      const V1Req&, V1Resp*),
                         grpc::Status (v1beta1::DRAPlugin::Stub::*beta_call)(
                             grpc::ClientContext*, const BetaReq&, BetaResp*)) {
  grpc::ClientContext ctx;
  Deadline(ctx);
  if (use_v1) {
    V1Resp resp;
    grpc::Status s = (*v1::DRAPlugin::NewStub(channel).*v1_call)(&ctx, RequestOf<V1Req>(claims), &resp);
    if (!s.ok()) return FromGrpcStatus(s, "v1 " + method);
    return resp;
  }
  BetaResp resp;
  grpc::Status s = (*v1beta1::DRAPlugin::NewStub(channel).*beta_call)(&ctx, RequestOf<BetaReq>(claims), &resp);
  if (!s.ok()) return FromGrpcStatus(s, "v1beta1 " + method);
  return Rewire<V1Resp>(resp);
}

}  // namespace

StatusOr<std::shared_ptr<grpc::Channel>> FakeDraKubelet::ChannelFor(DraApi api, bool* use_v1) const {
  std::shared_ptr<grpc::Channel> channel;
  std::string chosen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel = channel_;
    chosen = chosen_;
  }
  if (!channel) return FailedPreconditionError("no plugin registered");
  *use_v1 = api == DraApi::kV1 || (api == DraApi::kChosen && chosen == kV1);
  return channel;
}

StatusOr<v1::NodePrepareResourcesResponse> FakeDraKubelet::NodePrepareResources(
    const std::vector<DraClaim>& claims, DraApi api) {
  bool use_v1 = false;
  RDMAK8S_ASSIGN_OR_RETURN(auto channel, ChannelFor(api, &use_v1));
  return CallDra(channel, use_v1, claims, "NodePrepareResources",
                 &v1::DRAPlugin::Stub::NodePrepareResources,
                 &v1beta1::DRAPlugin::Stub::NodePrepareResources);
}

StatusOr<v1::NodeUnprepareResourcesResponse> FakeDraKubelet::NodeUnprepareResources(
    const std::vector<DraClaim>& claims, DraApi api) {
  bool use_v1 = false;
  RDMAK8S_ASSIGN_OR_RETURN(auto channel, ChannelFor(api, &use_v1));
  return CallDra(channel, use_v1, claims, "NodeUnprepareResources",
                 &v1::DRAPlugin::Stub::NodeUnprepareResources,
                 &v1beta1::DRAPlugin::Stub::NodeUnprepareResources);
}

FakePluginWatcher::FakePluginWatcher(std::string dir, std::chrono::milliseconds retry,
                                     std::chrono::seconds health_timeout)
    : dir_(std::move(dir)), retry_(retry), health_timeout_(health_timeout) {}

FakePluginWatcher::~FakePluginWatcher() { Stop(); }

Status FakePluginWatcher::Start() {
  inotify_fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_fd_ < 0) return ErrnoError(errno, "inotify_init1");
  if (::inotify_add_watch(inotify_fd_, dir_.c_str(), IN_CREATE | IN_MOVED_TO | IN_DELETE) < 0) {
    return ErrnoError(errno, "watch " + dir_);
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return ErrnoError(errno, "eventfd");
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.front() != '.') wanted_.emplace(name, 0);
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void FakePluginWatcher::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  published_.clear();
  registered_.clear();
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  inotify_fd_ = stop_fd_ = -1;
}

void FakePluginWatcher::Loop() {
  std::array<char, 4096> buf{};
  while (true) {
    Round();
    std::array<pollfd, 2> fds{{{stop_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}}};
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(retry_.count()));
    if (r < 0 && errno != EINTR) return;
    if ((fds[0].revents & POLLIN) != 0) return;
    if ((fds[1].revents & POLLIN) == 0) continue;
    ssize_t n = 0;
    while ((n = ::read(inotify_fd_, buf.data(), buf.size())) > 0) {
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + off);
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
        if (ev->len == 0) continue;
        const std::string name(ev->name);
        if (name.front() == '.') continue;  // kubelet: "Ignoring file (starts with '.')"
        std::unique_ptr<FakeDraKubelet> dropped;
        std::lock_guard<std::mutex> lock(mu_);
        if ((ev->mask & IN_DELETE) != 0) {
          wanted_.erase(name);
          published_.erase(name);
          auto it = registered_.find(name);
          if (it != registered_.end()) {
            dropped = std::move(it->second);
            registered_.erase(it);
          }
        } else {
          wanted_.emplace(name, 0);
        }
      }
    }
  }
}

void FakePluginWatcher::Round() {
  std::map<std::string, int> wanted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, fails] : wanted_) {
      if (registered_.count(name) == 0) wanted.emplace(name, fails);
    }
  }
  std::map<std::string, std::unique_ptr<FakeDraKubelet>> done;
  std::vector<std::string> drop;
  for (auto& [name, fails] : wanted) {
    const std::string path = dir_ + "/" + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      drop.push_back(name);
      continue;
    }
    auto kubelet = std::make_unique<FakeDraKubelet>(health_timeout_);
    if (kubelet->Register(path).ok()) {
      done.emplace(name, std::move(kubelet));
    } else {
      ++fails;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& name : drop) wanted_.erase(name);
  for (const auto& [name, fails] : wanted) {
    auto it = wanted_.find(name);
    if (it != wanted_.end() && done.count(name) == 0) it->second = fails;
  }
  for (auto& [name, kubelet] : done) {
    if (wanted_.count(name) == 0) continue;  // deleted meanwhile
    wanted_[name] = 0;
    registered_[name] = std::move(kubelet);
  }
  published_.clear();
  for (const auto& [name, kubelet] : registered_) published_[name] = kubelet.get();
  cv_.notify_all();
}

FakeDraKubelet* FakePluginWatcher::WaitForRegistered(const std::string& name,
                                                     std::chrono::steady_clock::duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return published_.count(name) != 0; });
  auto it = published_.find(name);
  return it == published_.end() ? nullptr : it->second;
}

std::map<std::string, int> FakePluginWatcher::failing() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int> out;
  for (const auto& [name, fails] : wanted_) {
    if (fails > 0 && registered_.count(name) == 0) out[name] = fails;
  }
  return out;
}

}  // namespace rdmak8s::fake
