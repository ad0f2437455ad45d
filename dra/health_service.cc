#include "dra/health_service.h"

#include <chrono>

#include "dra-health/v1alpha1/api.grpc.pb.h"

namespace rdmak8s::dra {

namespace {

// How often a waiting stream checks whether its client went away (gRPC has no wake-up for a
// cancelled sync stream).
constexpr auto kCancelCheck = std::chrono::milliseconds(200);

class HealthService final : public v1alpha1::DRAResourceHealth::Service {
 public:
  HealthService(const DeviceCatalog* catalog, const std::atomic<bool>* stopping)
      : catalog_(catalog), stopping_(stopping) {}

  grpc::Status NodeWatchResources(
      grpc::ServerContext* ctx, const v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<v1alpha1::NodeWatchResourcesResponse>* writer) override {
    uint64_t sent = catalog_->generation();
    if (!writer->Write(ToHealthMessage(catalog_->All()))) return grpc::Status::OK;
    while (!ctx->IsCancelled() && !catalog_->shut_down() && !stopping_->load()) {
      uint64_t now = catalog_->WaitForChange(sent, std::chrono::steady_clock::now() + kCancelCheck);
      if (now == sent) continue;
      sent = now;
      if (!writer->Write(ToHealthMessage(catalog_->All()))) break;
    }
    return grpc::Status::OK;
  }

 private:
  const DeviceCatalog* catalog_;
  const std::atomic<bool>* stopping_;
};

}  // namespace

v1alpha1::NodeWatchResourcesResponse ToHealthMessage(const std::vector<CatalogDevice>& devices) {
  v1alpha1::NodeWatchResourcesResponse out;
  for (const auto& d : devices) {
    auto* h = out.add_devices();
    h->mutable_device()->set_pool_name(d.pool);
    h->mutable_device()->set_device_name(d.device);
    h->set_health(d.health.healthy ? v1alpha1::HEALTHY : v1alpha1::UNHEALTHY);
    h->set_last_updated_time(d.last_updated);
  }
  return out;
}

std::unique_ptr<grpc::Service> NewHealthService(const DeviceCatalog* catalog,
                                                const std::atomic<bool>* stopping) {
  return std::make_unique<HealthService>(catalog, stopping);
}

}  // namespace rdmak8s::dra
