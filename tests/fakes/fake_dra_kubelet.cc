#include "fakes/fake_dra_kubelet.h"

#include <algorithm>

#include "dra/v1beta1/api.grpc.pb.h"

namespace rdmak8s::fake {

namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

constexpr char kV1[] = "v1.DRAPlugin";
constexpr char kV1beta1[] = "v1beta1.DRAPlugin";
constexpr char kHealth[] = "v1alpha1.DRAResourceHealth";
constexpr auto kCallTimeout = std::chrono::seconds(10);

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
  {
    grpc::ClientContext ctx;
    Deadline(ctx);
    grpc::Status s = reg->GetInfo(&ctx, pluginregistration::InfoRequest(), &info);
    if (!s.ok()) return FromGrpcStatus(s, "GetInfo on " + socket);
  }
  auto notify = [&](bool ok, const std::string& error) {
    pluginregistration::RegistrationStatus st;
    st.set_plugin_registered(ok);
    st.set_error(error);
    pluginregistration::RegistrationStatusResponse resp;
    grpc::ClientContext ctx;
    Deadline(ctx);
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

size_t FakeDraKubelet::health_messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_count_;
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
}

StatusOr<v1::NodePrepareResourcesResponse> FakeDraKubelet::NodePrepareResources(
    const std::vector<DraClaim>& claims, DraApi api) {
  std::shared_ptr<grpc::Channel> channel;
  std::string chosen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel = channel_;
    chosen = chosen_;
  }
  if (!channel) return FailedPreconditionError("no plugin registered");
  bool use_v1 = api == DraApi::kV1 || (api == DraApi::kChosen && chosen == kV1);
  grpc::ClientContext ctx;
  Deadline(ctx);
  if (use_v1) {
    v1::NodePrepareResourcesResponse resp;
    grpc::Status s = v1::DRAPlugin::NewStub(channel)->NodePrepareResources(
        &ctx, RequestOf<v1::NodePrepareResourcesRequest>(claims), &resp);
    if (!s.ok()) return FromGrpcStatus(s, "v1 NodePrepareResources");
    return resp;
  }
  v1beta1::NodePrepareResourcesResponse resp;
  grpc::Status s = v1beta1::DRAPlugin::NewStub(channel)->NodePrepareResources(
      &ctx, RequestOf<v1beta1::NodePrepareResourcesRequest>(claims), &resp);
  if (!s.ok()) return FromGrpcStatus(s, "v1beta1 NodePrepareResources");
  return Rewire<v1::NodePrepareResourcesResponse>(resp);
}

StatusOr<v1::NodeUnprepareResourcesResponse> FakeDraKubelet::NodeUnprepareResources(
    const std::vector<DraClaim>& claims, DraApi api) {
  std::shared_ptr<grpc::Channel> channel;
  std::string chosen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    channel = channel_;
    chosen = chosen_;
  }
  if (!channel) return FailedPreconditionError("no plugin registered");
  bool use_v1 = api == DraApi::kV1 || (api == DraApi::kChosen && chosen == kV1);
  grpc::ClientContext ctx;
  Deadline(ctx);
  if (use_v1) {
    v1::NodeUnprepareResourcesResponse resp;
    grpc::Status s = v1::DRAPlugin::NewStub(channel)->NodeUnprepareResources(
        &ctx, RequestOf<v1::NodeUnprepareResourcesRequest>(claims), &resp);
    if (!s.ok()) return FromGrpcStatus(s, "v1 NodeUnprepareResources");
    return resp;
  }
  v1beta1::NodeUnprepareResourcesResponse resp;
  grpc::Status s = v1beta1::DRAPlugin::NewStub(channel)->NodeUnprepareResources(
      &ctx, RequestOf<v1beta1::NodeUnprepareResourcesRequest>(claims), &resp);
  if (!s.ok()) return FromGrpcStatus(s, "v1beta1 NodeUnprepareResources");
  return Rewire<v1::NodeUnprepareResourcesResponse>(resp);
}

}  // namespace rdmak8s::fake
