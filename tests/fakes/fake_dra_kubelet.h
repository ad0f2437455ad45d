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
//     re-parsed from its bytes, which only works because the two are wire-identical;
//   - health as kubelet (v1.36) shows it in the pod status (HealthOf): each message's entries
//     replace the cached ones; an entry whose last_updated_time is older than its
//     health_check_timeout_seconds (kubelet's default, 30 s, when 0: `health_timeout` here) reads
//     Unknown, and so does a device never reported;
//   - a container gets the CDI devices of its `request: <name>` (CdiDevicesForRequest): the
//     devices whose request_names hold exactly that name, or are empty. A subrequest name
//     ("nic/iwarp") matches nothing: kubelet compares the container's name as it is.
// Thread safety: all methods from any thread; waits are bounded by a deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
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
#include "rdmak8s/base/status.h"

namespace rdmak8s::fake {

enum class DraApi { kChosen, kV1, kV1beta1 };

struct DraClaim {
  std::string namespace_name;
  std::string uid;
  std::string name;
};

namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;

// What kubelet hands the runtime for a container naming `request` of the claim answered by
// `claim`: the CDI IDs of the devices serving that request (exact name) or every request.
std::vector<std::string> CdiDevicesForRequest(const v1::NodePrepareResourceResponse& claim,
                                              const std::string& request);

class FakeDraKubelet {
 public:
  // kubelet's default staleness timeout for a device whose plugin announced none.
  static constexpr std::chrono::seconds kDefaultHealthTimeout{30};
  explicit FakeDraKubelet(std::chrono::seconds health_timeout = kDefaultHealthTimeout)
      : health_timeout_(health_timeout) {}
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
  // kubelet's view of `pool`/`device` now (Unix seconds `now_unix`, default the wall clock):
  // HEALTHY / UNHEALTHY from the latest entry while it is fresh, else UNKNOWN.
  v1alpha1::HealthStatus HealthOf(const std::string& pool, const std::string& device,
                                  int64_t now_unix = 0) const;
  // The message field of the latest entry of `pool`/`device` ("" if none).
  std::string HealthMessageOf(const std::string& pool, const std::string& device) const;
  // Waits until a health message arrives at least `after` past the stream's first one and
  // `pred` holds for kubelet's view right then (HealthOf at the message's arrival); false after
  // `timeout`. What shows whether health stays fresh past the staleness timeout without
  // sleeping for it: the driver's own messages mark the time.
  bool WaitForHealthPast(std::chrono::seconds after,
                         const std::function<bool(const FakeDraKubelet&)>& pred,
                         std::chrono::steady_clock::duration timeout) const;
  // Cancels the health stream and drops the connection.
  void Disconnect();

 private:
  // The registered plugin's channel, and whether `api` means v1 there. FailedPrecondition
  // before a registration.
  StatusOr<std::shared_ptr<grpc::Channel>> ChannelFor(DraApi api, bool* use_v1) const;
  void HealthLoop();

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::shared_ptr<grpc::Channel> channel_;
  std::string chosen_;
  std::unique_ptr<grpc::ClientContext> health_ctx_;
  std::thread health_thread_;
  struct HealthEntry {
    v1alpha1::HealthStatus health = v1alpha1::UNKNOWN;
    int64_t last_updated = 0;
    int64_t timeout_seconds = 0;
    std::string message;
  };
  v1alpha1::HealthStatus HealthOfLocked(const std::string& key, int64_t now_unix) const;

  const std::chrono::seconds health_timeout_;
  std::optional<v1alpha1::NodeWatchResourcesResponse> latest_health_;
  std::map<std::string, HealthEntry> health_cache_;  // by "<pool>/<device>"
  std::optional<std::chrono::steady_clock::time_point> first_health_at_;
  std::chrono::steady_clock::time_point latest_health_at_{};
  size_t health_count_ = 0;
};

// kubelet's plugin watcher over one plugins_registry directory, as v1.36 behaves:
//   - every name that appears there (created, or renamed into it) and does not start with "."
//     becomes wanted. kubelet stats the file when it handles the event, so a socket bound under
//     a temporary name and renamed away at once is caught only when kubelet is quick; this fake
//     is always quick (it takes the name from the event), so any such name is caught;
//   - a name deleted stops being wanted (and its plugin is dropped); a name renamed away stays
//     wanted (kubelet ignores fsnotify's Rename) and fails for ever;
//   - each round (on events, else every `retry`) registers each wanted name not registered yet
//     (FakeDraKubelet::Register; a failure is counted and tried again next round); a name that
//     exists and is not a socket is dropped ("Ignoring non socket file").
// Thread safety: all methods from any thread.
class FakePluginWatcher {
 public:
  explicit FakePluginWatcher(std::string dir,
                             std::chrono::milliseconds retry = std::chrono::milliseconds(100),
                             std::chrono::seconds health_timeout = FakeDraKubelet::kDefaultHealthTimeout);
  ~FakePluginWatcher();
  FakePluginWatcher(const FakePluginWatcher&) = delete;
  FakePluginWatcher& operator=(const FakePluginWatcher&) = delete;

  // Watches the directory (names already there are wanted, as at kubelet's start).
  Status Start();
  void Stop();
  // The kubelet connection of the socket `name` once a round registered it (the whole round
  // done); null after `timeout`. Valid until the name is deleted or the watcher stops.
  FakeDraKubelet* WaitForRegistered(const std::string& name,
                                    std::chrono::steady_clock::duration timeout) const;
  // Wanted names whose registration failed in the last round, with their failure counts.
  std::map<std::string, int> failing() const;

 private:
  void Loop();
  void Round();

  const std::string dir_;
  const std::chrono::milliseconds retry_;
  const std::chrono::seconds health_timeout_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, int> wanted_;  // name -> failed attempts
  std::map<std::string, std::unique_ptr<FakeDraKubelet>> registered_;
  std::map<std::string, FakeDraKubelet*> published_;  // registered_ as of the last full round
};

}  // namespace rdmak8s::fake
