// FakeDraKubelet: the kubelet side of a DRA driver, for tests and the e2e suite, over real
// unix-socket gRPC. Behaves like kubelet's plugin watcher and DRA plugin manager where a driver
// can tell the difference:
//   - Register(<registration socket>) calls GetInfo, requires type "DRAPlugin", picks the first
//     of the plugin's supported_versions that kubelet knows ("v1.DRAPlugin", "v1beta1.DRAPlugin";
//     with none, NotifyRegistrationStatus(false, why) and an error), dials the endpoint and reports
//     NotifyRegistrationStatus(true); when the plugin lists "v1alpha1.DRAResourceHealth" it opens
//     the NodeWatchResources stream and keeps the latest message;
//   - NodePrepareResources / NodeUnprepareResources call the chosen version, or the one asked
//     for. Answers come back as v1 messages whatever version was called: a v1beta1 answer is
//     re-parsed from its bytes, which only works because the two are wire-identical.
// Thread safety: all methods from any thread; waits are bounded by a deadline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "dra-health/v1alpha1/api.grpc.pb.h"
#include "dra/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "rdmak8s/status.h"

namespace rdmak8s::fake {

enum class DraApi { kChosen, kV1, kV1beta1 };

struct DraClaim {
  std::string namespace_name;
  std::string uid;
  std::string name;
};

class FakeDraKubelet {
 public:
  FakeDraKubelet() = default;
  ~FakeDraKubelet();
  FakeDraKubelet(const FakeDraKubelet&) = delete;
  FakeDraKubelet& operator=(const FakeDraKubelet&) = delete;

  // The plugin watcher's steps for the socket at `registration_socket`; returns GetInfo's answer.
  StatusOr<pluginregistration::PluginInfo> Register(const std::string& registration_socket);
  // "v1.DRAPlugin" or "v1beta1.DRAPlugin" after a successful Register; "" before.
  std::string chosen_service() const;

  StatusOr<k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse> NodePrepareResources(
      const std::vector<DraClaim>& claims, DraApi api = DraApi::kChosen);
  StatusOr<k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse>
  NodeUnprepareResources(const std::vector<DraClaim>& claims, DraApi api = DraApi::kChosen);

  // Waits until the latest health message satisfies `pred`; nullopt after `timeout`.
  std::optional<v1alpha1::NodeWatchResourcesResponse> WaitForHealth(
      const std::function<bool(const v1alpha1::NodeWatchResourcesResponse&)>& pred,
      std::chrono::steady_clock::duration timeout) const;
  size_t health_messages() const;
  // Cancels the health stream and drops the connection.
  void Disconnect();

 private:
  void HealthLoop();

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::shared_ptr<grpc::Channel> channel_;
  std::string chosen_;
  std::unique_ptr<grpc::ClientContext> health_ctx_;
  std::thread health_thread_;
  std::optional<v1alpha1::NodeWatchResourcesResponse> latest_health_;
  size_t health_count_ = 0;
};

}  // namespace rdmak8s::fake
