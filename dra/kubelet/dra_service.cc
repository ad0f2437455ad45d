#include "dra/kubelet/dra_service.h"

#include <spdlog/spdlog.h>

#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"

namespace rdmak8s::dra {

namespace {

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

// Kubelet's deadline for the call (45 s: defaultClientCallTimeout, pkg/kubelet/cm/dra/plugin),
// on the steady clock the preparer bounds its claim reads with; none when kubelet set none.
std::optional<ClaimDeadline> CallDeadline(const grpc::ServerContext* ctx) {
  if (ctx == nullptr) return std::nullopt;
  const auto deadline = ctx->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return std::nullopt;
  const auto left = deadline - std::chrono::system_clock::now();
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
}

template <class ClaimMsg>
ClaimRef RefOf(const ClaimMsg& c) {
  return {c.namespace_(), c.uid(), c.name()};
}

// One implementation for both versions: `Api` is the generated namespace's service.
template <class Base, class PrepareReq, class PrepareResp, class UnprepareReq, class UnprepareResp>
class DraService final : public Base {
 public:
  DraService(Preparer* preparer, DraMetrics* metrics, const char* version)
      : preparer_(preparer), metrics_(metrics), version_(version) {}

  grpc::Status NodePrepareResources(grpc::ServerContext* ctx, const PrepareReq* req,
                                    PrepareResp* resp) override {
    const std::optional<ClaimDeadline> deadline = CallDeadline(ctx);
    for (const auto& c : req->claims()) {
      auto& out = (*resp->mutable_claims())[c.uid()];
      const auto started = std::chrono::steady_clock::now();
      StatusOr<std::vector<PreparedDevice>> devices = preparer_->Prepare(RefOf(c), deadline);
      if (metrics_ != nullptr) metrics_->ObservePrepare(devices.ok(), std::chrono::steady_clock::now() - started);
      if (!devices.ok()) {
        SPDLOG_ERROR("{} NodePrepareResources: {}", version_, devices.status().message());
        out.set_error(devices.status().message());
        continue;
      }
      for (const auto& d : *devices) {
        auto* dev = out.add_devices();
        dev->add_request_names(ParentRequestName(d.request));
        dev->set_pool_name(d.pool);
        dev->set_device_name(d.device);
        for (const auto& id : d.cdi_device_ids) dev->add_cdi_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const UnprepareReq* req,
                                      UnprepareResp* resp) override {
    for (const auto& c : req->claims()) {
      auto& out = (*resp->mutable_claims())[c.uid()];
      Status s = preparer_->Unprepare(RefOf(c));
      if (metrics_ != nullptr) metrics_->CountUnprepare(s.ok());
      if (!s.ok()) {
        SPDLOG_ERROR("{} NodeUnprepareResources: {}", version_, s.message());
        out.set_error(s.message());
      }
    }
    return grpc::Status::OK;
  }

 private:
  Preparer* preparer_;
  DraMetrics* metrics_;
  const char* version_;
};

}  // namespace

std::string ParentRequestName(const std::string& request) {
  return request.substr(0, request.find('/'));
}

std::unique_ptr<grpc::Service> NewDraServiceV1(Preparer* preparer, DraMetrics* metrics) {
  return std::make_unique<DraService<v1::DRAPlugin::Service, v1::NodePrepareResourcesRequest,
                                     v1::NodePrepareResourcesResponse, v1::NodeUnprepareResourcesRequest,
                                     v1::NodeUnprepareResourcesResponse>>(preparer, metrics, "v1");
}

std::unique_ptr<grpc::Service> NewDraServiceV1beta1(Preparer* preparer, DraMetrics* metrics) {
  return std::make_unique<
      DraService<v1beta1::DRAPlugin::Service, v1beta1::NodePrepareResourcesRequest,
                 v1beta1::NodePrepareResourcesResponse, v1beta1::NodeUnprepareResourcesRequest,
                 v1beta1::NodeUnprepareResourcesResponse>>(preparer, metrics, "v1beta1");
}

}  // namespace rdmak8s::dra
