#include "device-plugin/pools/pool_publisher.h"

#include <filesystem>

#include <spdlog/spdlog.h>

#include "device-plugin/metrics/node_check_results.h"
#include "device-plugin/pools/device_list_env.h"
#include "device-plugin/pools/pool_cdi_spec.h"
#include "device-plugin/pools/pools.h"
#include "node/cdi_spec.h"

namespace rdmak8s::dp {

std::optional<std::string> ExclusiveBlocker(
    const PluginConfig& config, const std::function<StatusOr<RdmaNetnsMode>()>& netns_mode) {
  bool any_exclusive = false;
  for (const auto& p : config.pools) any_exclusive |= p.mode == PoolMode::kExclusive;
  if (!any_exclusive) return std::nullopt;
  if (!netns_mode) return std::string("RDMA netns mode unknown (no RDMA netlink)");
  auto mode = netns_mode();
  if (!mode.ok()) return "cannot read the RDMA netns mode: " + mode.status().message();
  if (*mode == RdmaNetnsMode::kShared) {
    return std::string(
        "the node's RDMA netns mode is shared, so every pod would see every RDMA device; an "
        "exclusive pool needs `rdma system set netns exclusive`");
  }
  return std::nullopt;
}

std::shared_ptr<PoolState> BuildPoolState(const std::string& resource, const PoolConfig& pool,
                                          const std::vector<std::string>& pool_devs,
                                          const std::map<std::string, node::TrackedDevice>& devices,
                                          const std::optional<std::string>& exclusive_blocker,
                                          const PublishOptions& options) {
  auto state = std::make_shared<PoolState>();
  state->resource = resource;
  state->pool = pool;
  state->cdi = options.cdi;
  state->cdi_kind = resource;
  state->dev_root = options.dev_root;
  for (const auto& name : pool_devs) {
    node::TrackedDevice t = devices.at(name);
    if (pool.mode == PoolMode::kExclusive && exclusive_blocker && t.health.healthy) {
      t.health = {false, *exclusive_blocker};
    }
    state->devices[name] = std::move(t);
  }
  FillIds(*state);
  return state;
}

Metrics::PoolCounts CountPool(const PoolState& state) {
  Metrics::PoolCounts counts;
  for (const auto& id : state.ids) {
    const node::TrackedDevice* t = state.ForId(id);
    (t && t->health.healthy ? counts.healthy_ids : counts.unhealthy_ids)++;
  }
  for (const auto& [dev, t] : state.devices) {
    (t.health.healthy ? counts.healthy_devices : counts.unhealthy_devices)++;
  }
  return counts;
}

PoolPublisher::PoolPublisher(PublishOptions options)
    : options_(std::move(options)), nfd_(options_.nfd_features_dir) {}

void PoolPublisher::RecheckNetnsMode(const PluginConfig& config, bool pools_changed) {
  auto blocker = ExclusiveBlocker(config, options_.netns_mode);
  if (pools_changed) {
    exclusive_blocker_ = std::move(blocker);
    if (exclusive_blocker_) SPDLOG_ERROR("exclusive pools unusable: {}", *exclusive_blocker_);
    return;
  }
  if (blocker == exclusive_blocker_) return;
  if (blocker) {
    SPDLOG_ERROR("exclusive pools unusable: {}", *blocker);
  } else if (exclusive_blocker_) {
    SPDLOG_INFO("RDMA netns mode is exclusive: exclusive pools usable");
  }
  exclusive_blocker_ = std::move(blocker);
}

void PoolPublisher::Publish(const PluginConfig& config,
                            const std::map<std::string, node::TrackedDevice>& devices,
                            const std::vector<Target>& pools) {
  std::vector<RdmaDevice> all;
  all.reserve(devices.size());
  for (const auto& [name, t] : devices) all.push_back(t.dev);
  PoolMatch match = MatchPools(config, all);
  if (match.warnings != overlap_warnings_) {
    for (const auto& w : match.warnings) SPDLOG_WARN("{}", w);
    overlap_warnings_ = match.warnings;
  }
  std::vector<CounterDevice> counter_devs;
  NodeFeatures features;
  for (const Target& pool : pools) {
    auto state = BuildPoolState(pool.resource, pool.cfg, match.devices[pool.name], devices,
                                exclusive_blocker_, options_);
    state->env_left_out = SharedDeviceListEnv(config, pool.cfg);
    std::vector<AdvertisedId> seen = Advertised(*state);
    Metrics::PoolCounts counts = CountPool(*state);
    for (const auto& [dev, t] : state->devices) {
      if (t.dev.transport != Transport::kUnknown) features.transports.insert(t.dev.transport);
      if (t.presence != node::Presence::kPresent) continue;  // its counters are not the node's to read
      CounterDevice c{dev, t.dev.rdma_driver.empty() ? t.dev.driver : t.dev.rdma_driver,
                      t.dev.transport, {}};
      for (const auto& p : t.dev.ports) c.ports.push_back(p.port_num);
      counter_devs.push_back(std::move(c));
    }
    if (options_.cdi) {
      Status s = node::WriteFileIfChanged(CdiSpecPath(options_.cdi_dir, pool.resource), BuildCdiSpec(*state));
      if (!s.ok()) SPDLOG_ERROR("CDI spec for {}: {}", pool.resource, s.message());
    }
    if (options_.metrics) options_.metrics->SetPoolDevices(pool.resource, counts);
    std::vector<AdvertisedId>& last = published_[pool.name];  // empty before the first
    bool changed = seen != last;
    last = std::move(seen);
    pool.server.Publish(std::move(state), changed);
    if (changed) {
      SPDLOG_DEBUG("{}: {} healthy, {} unhealthy devices ({} / {} IDs)", pool.resource,
                   counts.healthy_devices, counts.unhealthy_devices, counts.healthy_ids,
                   counts.unhealthy_ids);
    }
  }
  if (options_.metrics) options_.metrics->SetCounterDevices(std::move(counter_devs));
  UpdateNodeFeatures(std::move(features));
}

void PoolPublisher::UpdateNodeFeatures(NodeFeatures features) {
  if (options_.nfd_features_dir.empty()) return;
  if (!features.transports.empty()) {
    if (options_.netns_mode) {
      if (auto mode = options_.netns_mode(); mode.ok()) features.netns_mode = *mode;
    }
    if (!options_.node_check_results.empty()) {
      if (auto r = ReadNodeCheckResults(options_.node_check_results); r.ok()) {
        features.lossless_ready = r->passed;
      }
    }
  }
  Status s = nfd_.Update(features);
  std::string error = s.ok() ? "" : s.message();
  if (error != nfd_error_) {
    if (!error.empty()) SPDLOG_WARN("{}", error);
    else SPDLOG_INFO("NFD feature file {} written", nfd_.path());
    nfd_error_ = std::move(error);
  }
}

void PoolPublisher::StopAdvertising() {
  Status s = nfd_.Remove();
  if (!s.ok()) SPDLOG_WARN("{}", s.message());
}

void PoolPublisher::Withdraw(const std::string& name, const std::string& resource, bool remove_cdi) {
  published_.erase(name);
  if (remove_cdi && options_.cdi) {
    std::error_code ec;
    std::filesystem::remove(CdiSpecPath(options_.cdi_dir, resource), ec);
  }
  if (options_.metrics) options_.metrics->RemovePool(resource);
}

}  // namespace rdmak8s::dp
