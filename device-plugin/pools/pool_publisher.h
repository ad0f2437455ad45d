// PoolPublisher: from the tracked devices to what each pool publishes. For every pool it builds
// the PoolState (the pool's devices by MatchPools, their IDs and health; an exclusive pool's
// devices Unhealthy while the node's RDMA netns mode forbids exclusive use), writes the pool's
// CDI spec (with --cdi) before kubelet hears of a change, hands the state to the pool's server
// (its ListAndWatch streams are notified only when what kubelet sees changed) and reports the
// pool's device counts and the devices whose port counters a scrape reads to the metrics, and
// keeps the node-feature-discovery file (nfd_features.h) in step with what is advertised.
//
// Warnings (pools overlapping, exclusive pools unusable) are logged once per change, here.
// Thread safety: none; one thread (the daemon's event loop).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device-plugin/config/config.h"
#include "device-plugin/metrics/metrics.h"
#include "device-plugin/nfd_features.h"
#include "device-plugin/pools/pool_state.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/rdma_netlink.h"

namespace rdmak8s::dp {

// Why exclusive pools cannot be used now ("the node's RDMA netns mode is shared, ..."), asking
// `netns_mode` (null: unknown, which blocks too); nullopt when `config` has no exclusive pool or
// the mode is exclusive.
std::optional<std::string> ExclusiveBlocker(
    const PluginConfig& config, const std::function<StatusOr<RdmaNetnsMode>()>& netns_mode);

struct PublishOptions {
  bool cdi = false;     // Allocate answers with CDI names; CDI specs are written to cdi_dir
  std::string cdi_dir;
  std::string dev_root = "/dev";  // where the device nodes are read on the host
  Metrics* metrics = nullptr;     // optional, not owned
  // The node's RDMA netns mode (null: unknown).
  std::function<StatusOr<RdmaNetnsMode>()> netns_mode;
  // NFD's features.d ("": no feature file) and the node check's results file ("": no
  // lossless-ready label).
  std::string nfd_features_dir;
  std::string node_check_results;
};

// The state `pool` (resource `resource`) advertises with `pool_devs` (rdma_dev names, each a key
// of `devices`): with a blocker, a healthy device of an exclusive pool is Unhealthy for its reason.
std::shared_ptr<PoolState> BuildPoolState(const std::string& resource, const PoolConfig& pool,
                                          const std::vector<std::string>& pool_devs,
                                          const std::map<std::string, node::TrackedDevice>& devices,
                                          const std::optional<std::string>& exclusive_blocker,
                                          const PublishOptions& options);
// Distinct devices and advertised IDs of `state`, each split by health.
Metrics::PoolCounts CountPool(const PoolState& state);

class PoolPublisher {
 public:
  // One pool to publish to (the caller's, for the length of the call).
  struct Target {
    const std::string& name;
    const std::string& resource;
    const PoolConfig& cfg;
    PoolStateSink& server;
  };

  explicit PoolPublisher(PublishOptions options);

  // Asks the netns mode again for `config` (ExclusiveBlocker): what exclusive pools are published
  // with from the next Publish. Logs a blocker that appears (an error) or goes (info);
  // `pools_changed` (a new config) logs a blocker even when it is the same as before.
  void RecheckNetnsMode(const PluginConfig& config, bool pools_changed);
  const std::optional<std::string>& exclusive_blocker() const { return exclusive_blocker_; }

  // Publishes every pool of `pools` (each a pool of `config`) from `devices` (every tracked
  // device). A CDI spec that cannot be written is logged; the pool is published all the same.
  void Publish(const PluginConfig& config, const std::map<std::string, node::TrackedDevice>& devices,
               const std::vector<Target>& pools);
  // The pool `name` is gone: forgets what it published, its metrics, and with `remove_cdi` (and
  // --cdi) its CDI spec file.
  void Withdraw(const std::string& name, const std::string& resource, bool remove_cdi);
  // The plugin stops advertising (shutdown): removes the NFD feature file.
  void StopAdvertising();

 private:
  void UpdateNodeFeatures(NodeFeatures features);

  PublishOptions options_;
  NfdFeatureFile nfd_;
  std::string nfd_error_;                          // logged once per change
  std::optional<std::string> exclusive_blocker_;
  std::vector<std::string> overlap_warnings_;      // logged once per change
  std::map<std::string, std::vector<AdvertisedId>> published_;  // pool name -> what kubelet last saw
};

}  // namespace rdmak8s::dp
