#include "dra/kubelet/health_service.h"

#include <algorithm>
#include <ctime>

#include "dra-health/v1alpha1/api.grpc.pb.h"

namespace rdmak8s::dra {

namespace {

// How often a waiting stream checks whether its client went away (gRPC has no wake-up for a
// cancelled sync stream).
constexpr auto kCancelCheck = std::chrono::milliseconds(200);

std::string Bounded(std::string message) {
  if (message.size() > kMaxHealthMessage) {
    message.resize(kMaxHealthMessage - 3);
    message += "...";
  }
  return message;
}

class HealthService final : public v1alpha1::DRAResourceHealth::Service {
 public:
  HealthService(const DeviceCatalog* catalog, const std::atomic<bool>* stopping,
                HealthStreamOptions options)
      : catalog_(catalog), stopping_(stopping), options_(std::move(options)) {
    if (!options_.now) options_.now = [] { return static_cast<int64_t>(std::time(nullptr)); };
  }

  grpc::Status NodeWatchResources(
      grpc::ServerContext* ctx, const v1alpha1::NodeWatchResourcesRequest*,
      grpc::ServerWriter<v1alpha1::NodeWatchResourcesResponse>* writer) override {
    std::map<std::string, std::string> sent_devices;  // DRA name -> pool, of the last message
    std::map<std::string, std::string> gone;
    auto send = [&] {
      std::vector<CatalogDevice> devices = catalog_->All();
      std::map<std::string, std::string> now_devices;
      for (const auto& d : devices) now_devices[d.device] = d.pool;
      for (const auto& [name, pool] : sent_devices) {
        if (now_devices.count(name) == 0) gone[name] = pool;
      }
      for (const auto& [name, pool] : now_devices) gone.erase(name);
      sent_devices = std::move(now_devices);
      return writer->Write(ToHealthMessage(devices, options_.now(), options_.timeout_seconds, gone));
    };
    uint64_t sent = catalog_->generation();
    if (!send()) return grpc::Status::OK;
    auto next_full = std::chrono::steady_clock::now() + options_.resend_interval;
    while (!ctx->IsCancelled() && !catalog_->shut_down() && !stopping_->load()) {
      auto wake = std::min(next_full, std::chrono::steady_clock::now() + kCancelCheck);
      uint64_t now = catalog_->WaitForChange(sent, wake);
      if (now == sent && std::chrono::steady_clock::now() < next_full) continue;
      sent = now;
      if (!send()) break;
      next_full = std::chrono::steady_clock::now() + options_.resend_interval;
    }
    return grpc::Status::OK;
  }

 private:
  const DeviceCatalog* catalog_;
  const std::atomic<bool>* stopping_;
  HealthStreamOptions options_;
};

}  // namespace

v1alpha1::NodeWatchResourcesResponse ToHealthMessage(const std::vector<CatalogDevice>& devices,
                                                     int64_t now, int64_t timeout_seconds,
                                                     const std::map<std::string, std::string>& gone) {
  v1alpha1::NodeWatchResourcesResponse out;
  for (const auto& d : devices) {
    auto* h = out.add_devices();
    h->mutable_device()->set_pool_name(d.pool);
    h->mutable_device()->set_device_name(d.device);
    h->set_health(d.health.healthy ? v1alpha1::HEALTHY : v1alpha1::UNHEALTHY);
    h->set_last_updated_time(now);
    h->set_health_check_timeout_seconds(timeout_seconds);
    if (!d.health.healthy) {
      h->set_message(Bounded(d.dev.name + ": " + (d.health.reason.empty() ? "unhealthy" : d.health.reason)));
    }
  }
  for (const auto& [device, pool] : gone) {
    auto* h = out.add_devices();
    h->mutable_device()->set_pool_name(pool);
    h->mutable_device()->set_device_name(device);
    h->set_health(v1alpha1::UNHEALTHY);
    h->set_last_updated_time(now);
    h->set_health_check_timeout_seconds(timeout_seconds);
    h->set_message("device gone");
  }
  return out;
}

std::unique_ptr<grpc::Service> NewHealthService(const DeviceCatalog* catalog,
                                                const std::atomic<bool>* stopping,
                                                HealthStreamOptions options) {
  return std::make_unique<HealthService>(catalog, stopping, std::move(options));
}

}  // namespace rdmak8s::dra
