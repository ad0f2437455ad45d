#include "support/fake_kubelet.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <grpcpp/grpcpp.h>

#include "support/kubelet_get_info.h"

namespace rdmak8s::fake {

namespace fs = std::filesystem;

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  StatusCode code = StatusCode::kInternal;
  switch (s.error_code()) {
    case grpc::StatusCode::NOT_FOUND: code = StatusCode::kNotFound; break;
    case grpc::StatusCode::INVALID_ARGUMENT: code = StatusCode::kInvalidArgument; break;
    case grpc::StatusCode::UNAVAILABLE: code = StatusCode::kUnavailable; break;
    case grpc::StatusCode::FAILED_PRECONDITION: code = StatusCode::kFailedPrecondition; break;
    case grpc::StatusCode::DEADLINE_EXCEEDED: code = StatusCode::kDeadlineExceeded; break;
    case grpc::StatusCode::UNIMPLEMENTED: code = StatusCode::kUnimplemented; break;
    default: break;
  }
  return Status(code, what + ": " + s.error_message());
}

namespace {

// kubelet dials with a blocking connect; a plain connect(2) gives the same verdict at once:
// refused or missing means "not serving".
Status ProbeUnixSocket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("dial " + path + ": path too long for a unix socket");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(errno, "socket");
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  close(fd);
  if (rc != 0) return ErrnoError(err, "dial " + path);
  return Status::Ok();
}

}  // namespace

struct FakeKubelet::Plugin {
  std::string resource;
  std::string endpoint_path;
  std::shared_ptr<grpc::Channel> channel;
  // Shared with the RPCs in flight on it; dropped (with `channel`) when the client is disconnected,
  // which closes the connection as kubelet's Disconnect does.
  std::shared_ptr<v1beta1::DevicePlugin::Stub> stub;
  v1beta1::DevicePluginOptions options;
  // The ListAndWatch call's context (it holds the channel too): cancelled under mu_, dropped with
  // the stub.
  std::unique_ptr<grpc::ClientContext> stream_ctx = std::make_unique<grpc::ClientContext>();
  std::thread stream_thread;
  bool closed_by_us = false;  // guarded by mu_: Stop, or a disconnect; its end changes nothing
  bool ended = false;         // guarded by mu_: the stream thread is about to return
};

class FakeKubelet::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(FakeKubelet* k) : k_(k) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    {
      std::lock_guard<std::mutex> lock(k_->mu_);
      k_->registrations_.push_back(*req);
    }
    if (req->version() != "v1beta1") {
      k_->AddEvent("register " + req->resource_name() + " failed: unsupported version " +
                   req->version());
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "unsupported device plugin API version " + req->version());
    }
    Clock::duration before_dial_back, before_reply;
    {
      std::lock_guard<std::mutex> lock(k_->mu_);
      before_dial_back = k_->delay_dial_back_;
      before_reply = k_->delay_reply_;
    }
    Status s = k_->Pause(before_dial_back)
                   ? k_->ConnectPlugin(req->resource_name(), k_->dir_ + "/" + req->endpoint())
                   : UnavailableError("kubelet stopping");
    if (!s.ok()) {
      k_->AddEvent("register " + req->resource_name() + " failed: " + s.message());
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, s.message());
    }
    {
      std::lock_guard<std::mutex> lock(k_->mu_);
      k_->accepted_[req->resource_name()]++;
    }
    k_->AddEvent("register " + req->resource_name() + " ok");
    // Registered whether or not this reply reaches the plugin in time.
    if (!k_->Pause(before_reply)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "kubelet stopping");
    return grpc::Status::OK;
  }

 private:
  FakeKubelet* k_;
};

FakeKubelet::FakeKubelet(std::string dir) : dir_(std::move(dir)) {}

FakeKubelet::~FakeKubelet() { Stop(); }

Status FakeKubelet::Start() {
  if (server_) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  // kubelet's device manager removes every socket in its directory when it starts (its own
  // kubelet.sock left by the previous kubelet included), then listens. As kubelet does
  // (CleanupPluginDirectory: Readdirnames, then a stat and a remove per name), the names are
  // read first and removed after: a socket a plugin binds during the sweep survives it, one it
  // bound just before (its private name, not yet renamed) does not.
  std::error_code ec;
  std::vector<fs::path> names;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) names.push_back(entry.path());
  for (const auto& path : names) {
    if (fs::is_socket(fs::status(path, ec))) fs::remove(path, ec);  // os.Stat follows links
  }
  // gRPC unlinks its listening path at shutdown; a kubelet stopped with SIGTERM leaves
  // kubelet.sock behind. So gRPC listens on a private name renamed to kubelet.sock.
  static std::atomic<uint64_t> counter{0};
  const std::string staging = dir_ + "/.fake-kubelet." + std::to_string(++counter) + ".sock";
  service_ = std::make_unique<RegistrationService>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + staging, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) return InternalError("serve " + socket_path() + ": gRPC server did not start");
  if (rename(staging.c_str(), socket_path().c_str()) != 0) {
    return ErrnoError(errno, "rename " + staging + " to " + socket_path());
  }
  return Status::Ok();
}

void FakeKubelet::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
  }
  CloseAllPlugins();
}

Status FakeKubelet::Restart() {
  Stop();
  return Start();
}

bool FakeKubelet::Pause(Clock::duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  if (d <= Clock::duration::zero()) return !stopping_;
  return !cv_.wait_for(lock, d, [&] { return stopping_; });
}

void FakeKubelet::SetRegisterDelays(Clock::duration before_dial_back, Clock::duration before_reply,
                                    Clock::duration before_stream) {
  std::lock_guard<std::mutex> lock(mu_);
  delay_dial_back_ = before_dial_back;
  delay_reply_ = before_reply;
  delay_stream_ = before_stream;
}

size_t FakeKubelet::DoubleRegistrations(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = doubles_.find(resource);
  return it == doubles_.end() ? 0 : it->second;
}

void FakeKubelet::AddEvent(std::string event) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(event));
  cv_.notify_all();
}

void FakeKubelet::CloseAllPlugins() {
  std::lock_guard<std::mutex> connect_lock(connect_mu_);
  std::vector<std::shared_ptr<Plugin>> plugins;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, p] : plugins_) plugins.push_back(p);
    plugins_.clear();
    for (auto& p : retired_) plugins.push_back(p);
    retired_.clear();
    for (auto& p : plugins) {
      p->closed_by_us = true;
      if (p->stream_ctx) p->stream_ctx->TryCancel();
    }
  }
  for (auto& p : plugins) {
    if (p->stream_thread.joinable()) p->stream_thread.join();
  }
}

void FakeKubelet::ReapRetired() {
  std::vector<std::shared_ptr<Plugin>> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(retired_, [&](const std::shared_ptr<Plugin>& p) {
      if (!p->ended) return false;
      done.push_back(p);
      return true;
    });
  }
  for (auto& p : done) {
    if (p->stream_thread.joinable()) p->stream_thread.join();
  }
}

Status FakeKubelet::ConnectPlugin(const std::string& resource, const std::string& endpoint_path) {
  std::lock_guard<std::mutex> connect_lock(connect_mu_);
  RDMAK8S_RETURN_IF_ERROR(ProbeUnixSocket(endpoint_path));
  auto plugin = std::make_shared<Plugin>();
  plugin->resource = resource;
  plugin->endpoint_path = endpoint_path;
  // A connection of this Register's own, as kubelet's grpc.DialContext per Register makes: gRPC
  // C++ channels to one target otherwise share the process's subchannel, whose connection may
  // still lead to a server the plugin has since replaced at that path.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  plugin->channel = grpc::CreateCustomChannel("unix://" + endpoint_path,
                                              grpc::InsecureChannelCredentials(), args);
  plugin->stub = v1beta1::DevicePlugin::NewStub(plugin->channel);
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1beta1::Empty empty;
    grpc::Status s = plugin->stub->GetDevicePluginOptions(&ctx, empty, &plugin->options);
    if (!s.ok()) return FromGrpc(s, "GetDevicePluginOptions " + endpoint_path);
  }
  ReapRetired();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // kubelet's registerClient: the new client takes the name; the old one is not stopped.
    auto it = plugins_.find(resource);
    if (it != plugins_.end()) {
      retired_.push_back(it->second);
      doubles_[resource]++;
      events_.push_back("double register " + resource);
    }
    plugins_[resource] = plugin;
    latest_.erase(resource);
  }
  plugin->stream_thread = std::thread([this, plugin] { StreamLoop(plugin); });
  return Status::Ok();
}

void FakeKubelet::StreamLoop(std::shared_ptr<Plugin> plugin) {
  Clock::duration before_stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    before_stream = delay_stream_;
  }
  if (!Pause(before_stream)) {  // stopped first: no stream opens
    std::lock_guard<std::mutex> lock(mu_);
    plugin->ended = true;
    cv_.notify_all();
    return;
  }
  v1beta1::Empty empty;
  auto reader = plugin->stub->ListAndWatch(plugin->stream_ctx.get(), empty);
  AddEvent("stream " + plugin->resource + " open");
  v1beta1::ListAndWatchResponse resp;
  // A stream replaced by a newer registration no longer speaks for the resource.
  auto current = [&] {
    auto it = plugins_.find(plugin->resource);
    return it != plugins_.end() && it->second == plugin;
  };
  while (reader->Read(&resp)) {
    std::function<void(const std::string&, const v1beta1::ListAndWatchResponse&)> cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!current()) continue;
      cb = on_update_;
    }
    // The callback runs before any waiter can see the response (outside the lock: it may call
    // back into the kubelet), so a test that waited for a state has also counted it.
    if (cb) cb(plugin->resource, resp);
    std::lock_guard<std::mutex> lock(mu_);
    if (!current()) continue;
    latest_[plugin->resource] = resp;
    update_count_[plugin->resource]++;
    cv_.notify_all();
  }
  reader->Finish().IgnoreError();
  reader.reset();
  bool disconnected = false;
  std::unique_ptr<grpc::ClientContext> dropped_ctx;
  std::shared_ptr<v1beta1::DevicePlugin::Stub> dropped_stub;
  std::shared_ptr<grpc::Channel> dropped_channel;
  {
    // kubelet's runClient: "ListAndWatch ended unexpectedly", then it disconnects the client
    // that holds the resource name now (getClient(name)) — not necessarily this one — and every
    // device of the resource is Unhealthy until the plugin registers again. (A stream we closed
    // ourselves, on Stop or a disconnect, changes nothing.)
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plugins_.find(plugin->resource);
    if (!plugin->closed_by_us && it != plugins_.end()) {
      std::shared_ptr<Plugin> victim = it->second;
      plugins_.erase(it);
      victim->closed_by_us = true;
      if (victim->stream_ctx) victim->stream_ctx->TryCancel();
      if (victim != plugin) retired_.push_back(victim);
      auto latest = latest_.find(plugin->resource);
      if (latest != latest_.end()) {
        for (auto& d : *latest->second.mutable_devices()) d.set_health("Unhealthy");
      }
      disconnected = true;
      if (victim == plugin) retired_.push_back(plugin);
    }
    plugin->ended = true;
    // kubelet's Disconnect closes the client's connection (it no longer holds the resource:
    // replaced, disconnected, or the kubelet stopping).
    if (!current()) {
      dropped_ctx = std::move(plugin->stream_ctx);
      dropped_stub = std::move(plugin->stub);
      dropped_channel = std::move(plugin->channel);
    }
    cv_.notify_all();
  }
  // Outside the lock: with the last of these the connection closes.
  dropped_ctx.reset();
  dropped_stub.reset();
  dropped_channel.reset();
  AddEvent("stream " + plugin->resource + " closed");
  if (disconnected) AddEvent("disconnect " + plugin->resource);
}

std::vector<v1beta1::RegisterRequest> FakeKubelet::Registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

std::vector<std::string> FakeKubelet::Events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

bool FakeKubelet::WaitForRegistrations(const std::string& resource, size_t count,
                                       Clock::duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    auto it = accepted_.find(resource);
    return it != accepted_.end() && it->second >= count;
  });
}

std::optional<v1beta1::DevicePluginOptions> FakeKubelet::Options(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plugins_.find(resource);
  if (it == plugins_.end()) return std::nullopt;
  return it->second->options;
}

std::optional<v1beta1::ListAndWatchResponse> FakeKubelet::LatestDevices(
    const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_.find(resource);
  if (it == latest_.end()) return std::nullopt;
  return it->second;
}

size_t FakeKubelet::UpdateCount(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = update_count_.find(resource);
  return it == update_count_.end() ? 0 : it->second;
}

std::optional<v1beta1::ListAndWatchResponse> FakeKubelet::WaitForDevices(
    const std::string& resource,
    const std::function<bool(const v1beta1::ListAndWatchResponse&)>& pred,
    Clock::duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<v1beta1::ListAndWatchResponse> out;
  cv_.wait_for(lock, timeout, [&] {
    auto it = latest_.find(resource);
    if (it == latest_.end() || !pred(it->second)) return false;
    out = it->second;
    return true;
  });
  return out;
}

std::optional<v1beta1::ListAndWatchResponse> FakeKubelet::WaitForHealthy(
    const std::string& resource, size_t count, const std::vector<std::string>& ids,
    Clock::duration timeout) const {
  return WaitForDevices(
      resource,
      [&](const v1beta1::ListAndWatchResponse& r) {
        size_t healthy = 0;
        size_t named = 0;
        for (const auto& d : r.devices()) {
          if (d.health() != "Healthy") continue;
          healthy++;
          if (std::find(ids.begin(), ids.end(), d.id()) != ids.end()) named++;
        }
        return ids.empty() ? healthy >= count : named == ids.size();
      },
      timeout);
}

StatusOr<FakeKubelet::ContainerAllocation> FakeKubelet::AllocateContainer(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& ids_per_resource) {
  ContainerAllocation out;
  for (const auto& [resource, ids] : ids_per_resource) {
    auto resp = Allocate(resource, {ids});
    if (!resp.ok()) return resp.status();
    if (resp->container_responses_size() != 1) {
      return InternalError("allocate " + resource + ": " +
                           std::to_string(resp->container_responses_size()) +
                           " container responses for 1 container");
    }
    const auto& c = resp->container_responses(0);
    // kubelet's deviceRunContainerOptions: the first value of a key stays; a different one is
    // logged ("Environment variable has conflicting setting") and dropped.
    for (const auto& [k, v] : c.envs()) {
      auto [it, fresh] = out.envs.try_emplace(k, v);
      if (fresh || it->second == v) continue;
      std::string conflict = k + ": kept " + it->second + ", dropped " + v;
      AddEvent("env conflict " + conflict);
      out.conflicts.push_back(std::move(conflict));
    }
    out.responses.push_back(c);
  }
  return out;
}

void FakeKubelet::SetUpdateCallback(
    std::function<void(const std::string&, const v1beta1::ListAndWatchResponse&)> cb) {
  std::lock_guard<std::mutex> lock(mu_);
  on_update_ = std::move(cb);
}

std::shared_ptr<v1beta1::DevicePlugin::Stub> FakeKubelet::FindStub(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plugins_.find(resource);
  return it == plugins_.end() ? nullptr : it->second->stub;
}

StatusOr<v1beta1::AllocateResponse> FakeKubelet::Allocate(
    const std::string& resource, const std::vector<std::vector<std::string>>& ids_per_container) {
  auto stub = FindStub(resource);
  if (!stub) return NotFoundError("allocate " + resource + ": no plugin registered");
  v1beta1::AllocateRequest req;
  for (const auto& ids : ids_per_container) {
    auto* c = req.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
  }
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;  // no deadline: kubelet's endpoint.go calls Allocate under context.Background()
  grpc::Status s = stub->Allocate(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "allocate " + resource);
  return resp;
}

StatusOr<v1beta1::PreferredAllocationResponse> FakeKubelet::GetPreferredAllocation(
    const std::string& resource, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  auto stub = FindStub(resource);
  if (!stub) return NotFoundError("preferred allocation " + resource + ": no plugin registered");
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const auto& id : available) c->add_available_deviceids(id);
  for (const auto& id : must_include) c->add_must_include_deviceids(id);
  c->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse resp;
  grpc::ClientContext ctx;  // no deadline, as kubelet's (context.Background())
  grpc::Status s = stub->GetPreferredAllocation(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "preferred allocation " + resource);
  return resp;
}

StatusOr<v1beta1::PreStartContainerResponse> FakeKubelet::PreStartContainer(
    const std::string& resource, const std::vector<std::string>& ids) {
  auto stub = FindStub(resource);
  if (!stub) return NotFoundError("pre-start " + resource + ": no plugin registered");
  v1beta1::PreStartContainerRequest req;
  for (const auto& id : ids) req.add_devices_ids(id);
  v1beta1::PreStartContainerResponse resp;
  grpc::ClientContext ctx;  // kubelet's KubeletPreStartContainerRPCTimeoutInSecs
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = stub->PreStartContainer(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "pre-start " + resource);
  return resp;
}

StatusOr<pluginregistration::PluginInfo> FakeKubelet::RegisterViaPluginWatcher(
    const std::string& socket_path) {
  RDMAK8S_RETURN_IF_ERROR(ProbeUnixSocket(socket_path));
  auto channel = grpc::CreateChannel("unix://" + socket_path, grpc::InsecureChannelCredentials());
  auto stub = pluginregistration::Registration::NewStub(channel);
  pluginregistration::PluginInfo info;
  grpc::Status s = KubeletGetInfo(*stub, &info, [&](const grpc::Status& failed) {
    AddEvent("GetInfo " + socket_path + ": " + failed.error_message() + "; again after a backoff");
  });
  if (!s.ok()) return FromGrpc(s, "GetInfo " + socket_path);
  Status result;
  if (info.type() != "DevicePlugin") {
    result = InvalidArgumentError("plugin type " + info.type() + " is not DevicePlugin");
  } else {
    bool v1beta1 = false;
    for (const auto& v : info.supported_versions()) v1beta1 |= (v == "v1beta1");
    if (!v1beta1) result = InvalidArgumentError("plugin supports no device plugin version we speak");
  }
  if (result.ok()) {
    // kubelet uses the endpoint when given, else the registration socket itself.
    std::string endpoint = info.endpoint().empty() ? socket_path : info.endpoint();
    result = ConnectPlugin(info.name(), endpoint);
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kNotifyTimeout);
    pluginregistration::RegistrationStatus st;
    st.set_plugin_registered(result.ok());
    st.set_error(result.ok() ? "" : result.message());
    pluginregistration::RegistrationStatusResponse resp;
    grpc::Status s = stub->NotifyRegistrationStatus(&ctx, st, &resp);
    if (!s.ok()) return FromGrpc(s, "NotifyRegistrationStatus " + socket_path);
  }
  if (!result.ok()) return result.Prepend("plugin-watcher registration " + socket_path);
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepted_[info.name()]++;
  }
  AddEvent("register " + info.name() + " ok");
  return info;
}

}  // namespace rdmak8s::fake
