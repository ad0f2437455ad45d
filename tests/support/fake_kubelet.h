// FakeKubelet: the kubelet side of the device plugin API, for tests and the e2e suite.
//
// Behaves like kubelet's device manager where a plugin can notice the difference:
//   - serves v1beta1 Registration on <dir>/kubelet.sock;
//   - on Register, checks the version, then dials the plugin's endpoint (<dir>/<endpoint>) on a
//     connection of its own (kubelet's Go client makes a new grpc.ClientConn per Register: a
//     dial after the plugin served its socket again reaches the new server, never a connection
//     to the old one) and fails the Register if nothing is serving there (kubelet does the same,
//     which is why a plugin must serve before it registers);
//   - calls GetDevicePluginOptions inside Register, then answers the Register and keeps a
//     ListAndWatch stream open per resource, recording every update;
//   - can answer as slowly as a loaded kubelet (SetRegisterDelays): a pause before its dial-back
//     and one before its Register reply. The registration completes whatever the plugin's
//     Register deadline (kubelet before v1.26 dials back and asks the options under no deadline of
//     the caller; v1.36 under the caller's, so it too completes when its dial-back ends just
//     before that deadline and its reply arrives after): a plugin that gave up on a Register
//     must expect kubelet to hold it;
//   - tracks a plugin by resource name, as kubelet v1.36's device manager does (server.go's
//     registerClient / runClient): a second Register for a resource replaces the client without
//     stopping the first; whenever a client's ListAndWatch ends (the plugin ended it, or its
//     connection went), kubelet disconnects the client that holds the resource name *now*: so
//     after a second Register, the first stream ending (a plugin ends an older stream when a
//     newer one opens) closes the second connection too (a client the resource no longer has
//     gets its connection closed, as kubelet's Disconnect does). A disconnect turns every device of the
//     resource Unhealthy in LatestDevices() ("ListAndWatch ended unexpectedly"), and the
//     resource has no plugin (Allocate: kNotFound) until the plugin registers again. Each
//     Register accepted while a client of the resource is still held is counted
//     (DoubleRegistrations(): the defect that leaves a pool at 0);
//   - merges the env of the Allocate answers of one container as kubelet does
//     (AllocateContainer): a key set twice with different values keeps the first value and logs
//     the conflict ("Environment variable has conflicting setting"); the container is not
//     refused;
//   - calls GetPreferredAllocation and Allocate under no deadline (kubelet's endpoint.go passes
//     context.Background()) and PreStartContainer under kubelet's 30 s;
//   - Start() first removes every socket in <dir> (kubelet's start-up cleanup, kubelet.sock
//     included); Stop() leaves kubelet.sock in place, as a kubelet stopped with SIGTERM does.
// It can also play kubelet's plugin watcher: RegisterViaPluginWatcher() calls GetInfo on a
// socket in plugins_registry (under kubelet's 1 s deadline, tried again after kubelet's backoff
// when it fails), dials the endpoint it names and reports NotifyRegistrationStatus.
//
// Thread safety: all methods may be called from any thread; waits are bounded by a deadline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::fake {

using Clock = std::chrono::steady_clock;

class FakeKubelet {
 public:
  // `dir` plays /var/lib/kubelet/device-plugins. Nothing happens until Start().
  explicit FakeKubelet(std::string dir);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Deletes every socket in <dir> as kubelet does at start-up, then serves Registration on
  // <dir>/kubelet.sock.
  Status Start();
  // Stops serving and closes every plugin connection; sockets (kubelet.sock too) stay where
  // they are.
  void Stop();
  // Stop, then Start: a kubelet restart.
  Status Restart();

  std::string socket_path() const { return dir_ + "/kubelet.sock"; }

  // Every Register request received (accepted or not), in order.
  std::vector<v1beta1::RegisterRequest> Registrations() const;
  // A log of what happened, in order: "register <resource> ok", "register <resource> failed:
  // <why>", "double register <resource>" (see DoubleRegistrations), "stream <resource> open",
  // "stream <resource> closed", "disconnect <resource>" (the
  // resource's devices all Unhealthy until it registers again), "env conflict <key>: kept
  // <value>, dropped <value>".
  std::vector<std::string> Events() const;
  // Registers accepted for `resource` while this kubelet still held a client of it (a second
  // Register for one pool: kubelet v1.36 then drops the pool to 0 when the first stream ends).
  size_t DoubleRegistrations(const std::string& resource) const;
  // A loaded kubelet: each Register waits `before_dial_back` before it dials the plugin, and
  // `before_reply` after GetDevicePluginOptions before it answers; its ListAndWatch (kubelet's
  // goroutine, started as Register answers) waits `before_stream`, holding the connection. Zero
  // (the default): at once. Stop() cuts a pause short (the Register fails; no stream opens).
  void SetRegisterDelays(Clock::duration before_dial_back, Clock::duration before_reply,
                         Clock::duration before_stream = {});
  // True once at least `count` accepted registrations of `resource` were seen before `timeout`.
  bool WaitForRegistrations(const std::string& resource, size_t count,
                            Clock::duration timeout) const;

  // The options the plugin answered after its last registration.
  std::optional<v1beta1::DevicePluginOptions> Options(const std::string& resource) const;
  // The latest ListAndWatch update of `resource` on the current stream (all Unhealthy once the
  // plugin ended that stream); nullopt if none yet.
  std::optional<v1beta1::ListAndWatchResponse> LatestDevices(const std::string& resource) const;
  // Number of updates received for `resource` since the fake started.
  size_t UpdateCount(const std::string& resource) const;
  // Waits until the latest update of `resource` satisfies `pred`; returns it, or nullopt after
  // `timeout`.
  std::optional<v1beta1::ListAndWatchResponse> WaitForDevices(
      const std::string& resource,
      const std::function<bool(const v1beta1::ListAndWatchResponse&)>& pred,
      Clock::duration timeout) const;
  // Called for each update as it arrives (from the stream thread), before WaitForDevices can
  // see that update: once a wait returns, the callback has run for what it returned and for
  // every update before it. Set before Start().
  void SetUpdateCallback(
      std::function<void(const std::string&, const v1beta1::ListAndWatchResponse&)> cb);

  // Waits until the current stream of `resource` sent an update with at least `count` Healthy
  // devices (or, with `ids`, every one of them Healthy); returns it, or nullopt after `timeout`.
  // What kubelet's scheduler-side accounting waits for before it admits a pod.
  std::optional<v1beta1::ListAndWatchResponse> WaitForHealthy(const std::string& resource,
                                                               size_t count,
                                                               const std::vector<std::string>& ids,
                                                               Clock::duration timeout) const;

  // What one container got from several resources (kubelet's deviceRunContainerOptions).
  struct ContainerAllocation {
    std::map<std::string, std::string> envs;  // merged: the first value of a key is kept
    std::vector<std::string> conflicts;       // "<key>: kept <value>, dropped <value>"
    std::vector<v1beta1::ContainerAllocateResponse> responses;  // one per resource, in order
  };
  // One Allocate per resource (in the order given) for one container, env merged as kubelet
  // does. The first failed Allocate is the error.
  StatusOr<ContainerAllocation> AllocateContainer(
      const std::vector<std::pair<std::string, std::vector<std::string>>>& ids_per_resource);

  // RPCs on the registered plugin of `resource`. kNotFound when it never registered.
  StatusOr<v1beta1::AllocateResponse> Allocate(
      const std::string& resource, const std::vector<std::vector<std::string>>& ids_per_container);
  StatusOr<v1beta1::PreferredAllocationResponse> GetPreferredAllocation(
      const std::string& resource, const std::vector<std::string>& available,
      const std::vector<std::string>& must_include, int size);
  StatusOr<v1beta1::PreStartContainerResponse> PreStartContainer(
      const std::string& resource, const std::vector<std::string>& ids);

  // Plugin-watcher registration of the plugin whose registration socket is `socket_path`.
  StatusOr<pluginregistration::PluginInfo> RegisterViaPluginWatcher(const std::string& socket_path);

 private:
  class RegistrationService;
  struct Plugin;

  // Connects to a plugin endpoint (absolute path) for `resource`, as kubelet does on Register.
  Status ConnectPlugin(const std::string& resource, const std::string& endpoint_path);
  void StreamLoop(std::shared_ptr<Plugin> plugin);
  void AddEvent(std::string event);
  // Waits `d`, as a loaded kubelet would; false when Stop() came first.
  bool Pause(Clock::duration d);
  void CloseAllPlugins();
  // Joins the stream threads of retired plugins that ended. Caller holds connect_mu_.
  void ReapRetired();
  // The stub of the plugin registered for `resource` now; null when none.
  std::shared_ptr<v1beta1::DevicePlugin::Stub> FindStub(const std::string& resource) const;

  const std::string dir_;
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;

  // Held through ConnectPlugin and CloseAllPlugins: a Register the plugin cancelled on its side
  // still runs here when its successor arrives, and a plugin entry must not be replaced (or
  // dropped) before its stream thread is assigned, or nobody joins that thread.
  std::mutex connect_mu_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<v1beta1::RegisterRequest> registrations_;
  std::vector<std::string> events_;
  std::map<std::string, size_t> accepted_;
  std::map<std::string, size_t> doubles_;
  Clock::duration delay_dial_back_{};  // SetRegisterDelays
  Clock::duration delay_reply_{};
  Clock::duration delay_stream_{};
  bool stopping_ = false;  // Stop() in progress: pauses end
  std::map<std::string, std::shared_ptr<Plugin>> plugins_;
  // Replaced or disconnected plugins whose stream threads are still to be joined (guarded by
  // mu_; joined under connect_mu_).
  std::vector<std::shared_ptr<Plugin>> retired_;
  std::map<std::string, v1beta1::ListAndWatchResponse> latest_;
  std::map<std::string, size_t> update_count_;
  std::function<void(const std::string&, const v1beta1::ListAndWatchResponse&)> on_update_;
};

// Converts a gRPC status into ours ("<what>: <grpc message>").
Status FromGrpc(const grpc::Status& s, const std::string& what);

}  // namespace rdmak8s::fake
