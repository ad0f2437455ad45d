// The plugin-watcher side of a DRA driver: the pluginregistration v1 Registration service kubelet
// calls on the socket we place in its plugins_registry directory. GetInfo answers
// type "DRAPlugin", name = the driver name (kubelet routes claims of that driver to us),
// endpoint = the absolute path of our DRA socket, supported_versions = the gRPC services served
// there (dra_service.h names). NotifyRegistrationStatus is kubelet's verdict, kept for the
// caller (a refusal is logged once, here).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "pluginregistration/v1/api.pb.h"

namespace rdmak8s::dra {

inline constexpr char kDraPluginType[] = "DRAPlugin";

// The GetInfo answer. Pure.
pluginregistration::PluginInfo DraPluginInfo(const std::string& driver_name,
                                             const std::string& endpoint);

// Kubelet's last verdict: nullopt before any.
struct RegistrationVerdict {
  bool registered = false;
  std::string error;
};

class RegistrationState {
 public:
  void Set(RegistrationVerdict v);
  std::optional<RegistrationVerdict> Get() const;
  // Called (outside the lock, on the gRPC thread) with every verdict kubelet sends: a kubelet
  // that (re-)registered us may have deleted our ResourceSlices at its start, so the slice loop
  // publishes again. Set it before serving.
  void SetListener(std::function<void(const RegistrationVerdict&)> listener);

 private:
  mutable std::mutex mu_;
  std::optional<RegistrationVerdict> verdict_;
  std::function<void(const RegistrationVerdict&)> listener_;
};

// `state` is not owned and must outlive the service.
std::unique_ptr<grpc::Service> NewRegistrationService(pluginregistration::PluginInfo info,
                                                      RegistrationState* state);

}  // namespace rdmak8s::dra
