#include "device-plugin/kubelet/plugin_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "device-plugin/kubelet/pool_answers.h"
#include "device-plugin/kubelet/socket_peers.h"
#include "device-plugin/preferred_allocation/preferred_allocation.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "node/program_main.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::dp {

namespace {

grpc::Status ToGrpc(const Status& s) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (s.code()) {
    case StatusCode::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case StatusCode::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case StatusCode::kFailedPrecondition: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case StatusCode::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    default: break;
  }
  return grpc::Status(code, s.message());
}

// (st_dev, st_ino) of `path`; (0, 0) when there is nothing.
std::pair<dev_t, ino_t> IdOf(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}

// Where gRPC binds before the socket is renamed into place: a hidden name in the same directory
// (rename(2) stays on one filesystem; kubelet's plugin watcher skips names starting with '.').
std::string StagingPath(const std::string& socket_path) {
  static std::atomic<uint64_t> counter{0};
  std::string dir = socket_path.substr(0, socket_path.rfind('/') + 1);
  return dir + ".rdmak8s." + std::to_string(getpid()) + "." + std::to_string(++counter) + ".sock";
}

}  // namespace

class PoolServer::DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  explicit DevicePluginService(PoolServer* s) : s_(s) {}

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(true);
    std::unique_lock<std::mutex> lock(s_->mu_);
    s_->calls_.dial_backs++;
    s_->KubeletCalled(lock);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    std::unique_lock<std::mutex> lock(s_->mu_);
    s_->open_streams_++;
    s_->calls_.streams++;
    s_->KubeletCalled(lock);
    // kubelet keeps one stream per plugin: a new one supersedes the streams before it, which
    // end now rather than when the wait below first notices their kubelet went away (up to 5 s
    // each, holding a gRPC thread and a connection: a kubelet restarting quickly in
    // plugin-watcher mode, where our server is not restarted, piled them up).
    const uint64_t generation = ++s_->stream_generation_;
    s_->cv_.notify_all();
    uint64_t sent = 0;
    bool first = true;
    grpc::Status result = grpc::Status::OK;
    while (true) {
      // Updates and Stop() wake us at once; the timeout only notices a kubelet that went away
      // (sync gRPC has no cancellation callback). Within a second: a stream kubelet ended is what
      // makes the kubelet link register again (kubelet/pool_registration.h), and readiness follows it.
      s_->cv_.wait_for(lock, std::chrono::seconds(1), [&] {
        return s_->stopping_ || first || s_->publish_count_ != sent || s_->stream_generation_ != generation;
      });
      if (s_->stopping_ || ctx->IsCancelled() || s_->stream_generation_ != generation) break;
      if (!first && s_->publish_count_ == sent) continue;
      first = false;
      sent = s_->publish_count_;
      auto state = s_->state_;
      lock.unlock();
      bool ok = writer->Write(ToListAndWatch(*state));
      lock.lock();
      if (!ok) break;
    }
    s_->open_streams_--;
    s_->KubeletCalled(lock);
    return result;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* out) override {
    auto state = s_->state();
    auto topo = s_->TopologyOf(state);
    for (const auto& c : req->container_requests()) {
      std::vector<std::string_view> avail(c.available_deviceids().begin(),
                                          c.available_deviceids().end());
      std::vector<std::string> must(c.must_include_deviceids().begin(),
                                    c.must_include_deviceids().end());
      auto ids = PreferredAllocation(avail, must, c.allocation_size(), *topo);
      SPDLOG_DEBUG("preferred {}: size {} must [{}] -> [{}]", state->resource, c.allocation_size(),
                   Join(must, ","), Join(ids, ","));
      auto* r = out->add_container_responses();
      for (auto& id : ids) r->add_deviceids(std::move(id));
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* out) override {
    auto state = s_->state();
    for (const auto& c : req->container_requests()) {
      std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
      auto resp = BuildContainerResponse(*state, ids);
      std::vector<std::string> devs = DevicesOf(*state, ids);
      if (s_->options_.hooks.on_allocate) {
        s_->options_.hooks.on_allocate(state->resource, ids, devs,
                                       resp.ok() ? "" : resp.status().message());
      }
      if (!resp.ok()) {
        SPDLOG_ERROR("allocate {}: [{}] refused: {}", state->resource, Join(ids, ","),
                      resp.status().message());
        return ToGrpc(resp.status().Prepend("allocate " + state->resource));
      }
      SPDLOG_INFO("allocate {}: [{}] -> devices [{}]", state->resource, Join(ids, ","),
                  Join(devs, ","));
      *out->add_container_responses() = std::move(resp).value();
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;  // pre_start_required is false: nothing to prepare
  }

 private:
  PoolServer* s_;
};

class PoolServer::WatcherService final : public pluginregistration::Registration::Service {
 public:
  explicit WatcherService(PoolServer* s) : s_(s) {}
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* out) override {
    out->set_type("DevicePlugin");
    out->set_name(s_->state()->resource);
    out->set_endpoint(s_->options_.socket_path);
    out->add_supported_versions(kDevicePluginVersion);
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* st,
                                        pluginregistration::RegistrationStatusResponse*) override {
    const std::string resource = s_->state()->resource;
    if (st->plugin_registered()) {
      SPDLOG_INFO("plugin watcher registered {}", resource);
    } else {
      SPDLOG_ERROR("plugin watcher refused {}: {}", resource, st->error());
    }
    if (s_->options_.hooks.on_watcher_status) {
      s_->options_.hooks.on_watcher_status(resource, st->plugin_registered(), st->error());
    }
    return grpc::Status::OK;
  }

 private:
  PoolServer* s_;
};

PoolServer::PoolServer(Options options, std::shared_ptr<const PoolState> state)
    : options_(std::move(options)), state_(std::move(state)) {}

PoolServer::~PoolServer() { Stop(); }

Status PoolServer::Start() {
  if (server_) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }
  // gRPC unlinks the path it listened on when it shuts down, whoever's socket is there by then:
  // an old process stopping would take the socket of the new one that replaced it (a DaemonSet
  // rolling update). So gRPC binds a private name, renamed over the public one (atomically: no
  // moment without a socket, and a stale file is simply replaced), and Stop() removes the public
  // name only while it is still the socket bound here.
  //
  // A kubelet that starts removes every socket in its directory, and it may sweep while we bind:
  // our private name gone before the rename (ENOENT) is that sweep, not an error of ours.
  // Bind again under a new name; the sweep is one pass over the directory, so a few attempts
  // outlast it.
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    const std::string staging = StagingPath(options_.socket_path);
    service_ = std::make_unique<DevicePluginService>(this);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + staging, grpc::InsecureServerCredentials());
    builder.RegisterService(service_.get());
    if (options_.plugin_watcher) {
      watcher_ = std::make_unique<WatcherService>(this);
      builder.RegisterService(watcher_.get());
    }
    server_ = builder.BuildAndStart();
    if (!server_) {
      return InternalError("serve " + options_.socket_path + ": gRPC could not listen on " + staging);
    }
    auto id = IdOf(staging);
    if (options_.hooks.before_rename) options_.hooks.before_rename(staging);
    // kSocketMode before the socket has its public name: bind(2) gave it 0777 less the umask.
    // A failed chmod is the sweep's ENOENT too, or an error named below.
    if (chmod(staging.c_str(), node::kSocketMode) == 0 &&
        rename(staging.c_str(), options_.socket_path.c_str()) == 0) {
      socket_id_ = id;
      bound_path_ = staging;
      std::lock_guard<std::mutex> lock(mu_);
      calls_ = KubeletCalls{calls_.serving + 1, 0, 0};
      return Status::Ok();
    }
    int err = errno;
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
    unlink(staging.c_str());
    if (err != ENOENT || attempt == kAttempts) {
      return ErrnoError(err, "serve " + options_.socket_path + ": chmod and rename " + staging +
                                 (err == ENOENT ? " (removed " + std::to_string(kAttempts) +
                                                      " times before it could be renamed)"
                                                : ""));
    }
    SPDLOG_DEBUG("serve {}: {} was removed before its rename (a kubelet clearing its directory): "
                 "binding again", options_.socket_path, staging);
  }
}

void PoolServer::Stop() {
  if (!server_) return;
  // Only remove the file if it is still the socket we bound, not a newer one.
  if (socket_id_.second != 0 && IdOf(options_.socket_path) == socket_id_) {
    unlink(options_.socket_path.c_str());
  }
  socket_id_ = {};
  bound_path_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  server_.reset();
}

bool PoolServer::serving() const { return server_ != nullptr; }

bool PoolServer::SocketPresent() const {
  return socket_id_.second != 0 && IdOf(options_.socket_path) == socket_id_;
}

void PoolServer::Publish(std::shared_ptr<const PoolState> state, bool notify) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = std::move(state);
    if (notify) publish_count_++;
  }
  cv_.notify_all();
}

std::shared_ptr<const AllocationTopology> PoolServer::TopologyOf(
    const std::shared_ptr<const PoolState>& state) {
  std::lock_guard<std::mutex> lock(topology_mu_);
  if (topology_state_ != state) {
    topology_ = std::make_shared<const AllocationTopology>(PoolTopology(*state));
    topology_state_ = state;
  }
  return topology_;
}

std::shared_ptr<const PoolState> PoolServer::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

PoolServer::KubeletCalls PoolServer::kubelet_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

StatusOr<int> PoolServer::OpenConnections() const {
  if (bound_path_.empty()) return 0;
  return AcceptedConnections(bound_path_);
}

int PoolServer::open_streams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_streams_;
}

bool PoolServer::WaitForOpenStreams(int count, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return open_streams_ == count; });
}

void PoolServer::KubeletCalled(std::unique_lock<std::mutex>& lock) {
  cv_.notify_all();
  if (!options_.hooks.on_kubelet_call) return;
  lock.unlock();
  options_.hooks.on_kubelet_call();
  lock.lock();
}

}  // namespace rdmak8s::dp
