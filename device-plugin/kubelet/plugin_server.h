// PoolServer: the gRPC server of one pool on its own unix socket — the v1beta1 DevicePlugin
// service, plus (plugin-watcher mode) the pluginregistration Registration service on the same
// socket. Registering with kubelet is kubelet/pool_registration.h's.
//
// The daemon publishes a new PoolState whenever something kubelet should see changed; every
// open ListAndWatch stream sends the full list at once; a new stream ends the ones before it (kubelet
// keeps one). Stop() ends the streams, stops serving
// and removes the socket file if it is still ours.
//
// Thread safety: Publish/state/Stop may be called from any thread; RPCs run on gRPC's threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include <grpcpp/grpcpp.h>

#include "device-plugin/pools/pool_state.h"
#include "device-plugin/preferred_allocation/preferred_allocation.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

inline constexpr char kDevicePluginVersion[] = "v1beta1";

struct ServerHooks {
  // One call per container of each Allocate; `error` empty on success.
  std::function<void(const std::string& resource, const std::vector<std::string>& ids,
                     const std::vector<std::string>& devices, const std::string& error)>
      on_allocate;
  // Plugin-watcher NotifyRegistrationStatus.
  std::function<void(const std::string& resource, bool registered, const std::string& error)>
      on_watcher_status;
  // kubelet called: a ListAndWatch stream opened or ended (open_streams() already says so), or
  // kubelet dialled back (GetDevicePluginOptions; kubelet_calls() already counts either). From gRPC's
  // threads: it must only hand the news over (the kubelet link wakes its event loop).
  std::function<void()> on_kubelet_call;
  // Between gRPC's bind of the private name and its rename to the socket path: the window in
  // which a starting kubelet's sweep of its directory can remove it. For tests.
  std::function<void(const std::string& staging_path)> before_rename;
};

class PoolServer : public PoolStateSink {
 public:
  struct Options {
    std::string socket_path;      // absolute
    bool plugin_watcher = false;  // also serve pluginregistration.Registration
    ServerHooks hooks;
  };

  PoolServer(Options options, std::shared_ptr<const PoolState> state);
  ~PoolServer();
  PoolServer(const PoolServer&) = delete;
  PoolServer& operator=(const PoolServer&) = delete;

  // Binds and serves, replacing whatever file is at the socket path (a stale socket, or the
  // socket of another process: the newest server wins). kInternal when gRPC cannot listen; the
  // private name removed before its rename (a kubelet sweeping its directory) is bound again,
  // up to 5 times, then kNotFound.
  Status Start();
  // Removes the socket file if it is still the one Start() bound (same device and inode: a
  // socket that replaced ours is left alone), ends streams, stops serving.
  void Stop();
  bool serving() const;
  // True when our socket file is still in place (kubelet removes it when it restarts; another
  // server may have replaced it).
  bool SocketPresent() const;

  // Replaces the state; with `notify`, every open ListAndWatch stream sends it.
  void Publish(std::shared_ptr<const PoolState> state, bool notify) override;
  std::shared_ptr<const PoolState> state() const;
  const std::string& socket_path() const { return options_.socket_path; }
  // Which serving this is (every Start() that serves makes a new one: kubelet's connections to
  // an earlier one are gone), and what kubelet called on it: GetDevicePluginOptions and
  // ListAndWatch streams opened. kubelet calls GetDevicePluginOptions inside Register, on the
  // connection it dialled back on, before it stores the plugin and answers (kubelet devicemanager:
  // Register -> connectClient -> client.Connect -> PluginConnected), then opens ListAndWatch; so a
  // count that grew since a Register was sent is kubelet having reached this serving for it.
  struct KubeletCalls {
    uint64_t serving = 0;  // 0: never served
    uint64_t dial_backs = 0;
    uint64_t streams = 0;
    friend bool operator==(const KubeletCalls&, const KubeletCalls&) = default;
  };
  KubeletCalls kubelet_calls() const;
  // Connections open to this serving (kubelet's dial-backs it has not closed), from
  // /proc/net/unix (kubelet/socket_peers.h). An error when that cannot be read; 0 when not serving.
  StatusOr<int> OpenConnections() const;
  // Number of ListAndWatch streams currently open. A stream whose kubelet went away (closed the
  // connection) counts until its handler notices, within a second.
  int open_streams() const;
  // True once open_streams() == `count`, false after `timeout`. For tests.
  bool WaitForOpenStreams(int count, std::chrono::milliseconds timeout) const;

 private:
  class DevicePluginService;
  class WatcherService;

  Options options_;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<WatcherService> watcher_;
  std::unique_ptr<grpc::Server> server_;
  std::pair<dev_t, ino_t> socket_id_{0, 0};  // (st_dev, st_ino) of the socket we bound
  std::string bound_path_;  // the private name gRPC bound (the address of every accepted socket)

  // The preferred-allocation topology of `state` (PoolTopology), built once per published
  // state: a request pays only for its own IDs.
  std::shared_ptr<const AllocationTopology> TopologyOf(const std::shared_ptr<const PoolState>& state);
  // After open_streams_ or calls_ changed (`lock` holds mu_): wakes WaitForOpenStreams,
  // runs the hook without the lock.
  void KubeletCalled(std::unique_lock<std::mutex>& lock);

  std::mutex topology_mu_;
  std::shared_ptr<const PoolState> topology_state_;
  std::shared_ptr<const AllocationTopology> topology_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::shared_ptr<const PoolState> state_;
  uint64_t publish_count_ = 0;
  bool stopping_ = false;
  int open_streams_ = 0;
  KubeletCalls calls_;
  uint64_t stream_generation_ = 0;  // of the newest ListAndWatch stream: it supersedes the others
};

}  // namespace rdmak8s::dp
