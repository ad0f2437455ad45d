#include "dra/kubelet/registration.h"

#include <spdlog/spdlog.h>

#include "dra/kubelet/dra_service.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace rdmak8s::dra {

namespace {

class RegistrationService final : public pluginregistration::Registration::Service {
 public:
  RegistrationService(pluginregistration::PluginInfo info, RegistrationState* state)
      : info_(std::move(info)), state_(state) {}

  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* out) override {
    *out = info_;
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus* s,
                                        pluginregistration::RegistrationStatusResponse*) override {
    if (s->plugin_registered()) {
      SPDLOG_INFO("kubelet registered DRA driver {} (endpoint {})", info_.name(), info_.endpoint());
    } else {
      SPDLOG_ERROR("kubelet refused DRA driver {}: {}", info_.name(), s->error());
    }
    state_->Set({s->plugin_registered(), s->error()});
    return grpc::Status::OK;
  }

 private:
  const pluginregistration::PluginInfo info_;
  RegistrationState* state_;
};

}  // namespace

pluginregistration::PluginInfo DraPluginInfo(const std::string& driver_name,
                                             const std::string& endpoint) {
  pluginregistration::PluginInfo info;
  info.set_type(kDraPluginType);
  info.set_name(driver_name);
  info.set_endpoint(endpoint);
  info.add_supported_versions(kDraPluginV1);
  info.add_supported_versions(kDraPluginV1beta1);
  info.add_supported_versions(kDraResourceHealthV1alpha1);
  return info;
}

void RegistrationState::Set(RegistrationVerdict v) {
  std::function<void(const RegistrationVerdict&)> listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    verdict_ = v;
    listener = listener_;
  }
  if (listener) listener(v);
}

void RegistrationState::SetListener(std::function<void(const RegistrationVerdict&)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

std::optional<RegistrationVerdict> RegistrationState::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return verdict_;
}

std::unique_ptr<grpc::Service> NewRegistrationService(pluginregistration::PluginInfo info,
                                                      RegistrationState* state) {
  return std::make_unique<RegistrationService>(std::move(info), state);
}

}  // namespace rdmak8s::dra
