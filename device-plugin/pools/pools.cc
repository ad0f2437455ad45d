#include "device-plugin/pools/pools.h"

namespace rdmak8s::dp {

PoolMatch MatchPools(const PluginConfig& config, const std::vector<RdmaDevice>& all) {
  PoolMatch out;
  for (const auto& pool : config.pools) out.devices[pool.name];
  for (const auto& dev : all) {
    const PoolConfig* owner = nullptr;
    for (const auto& pool : config.pools) {
      if (!node::SelectorsMatch(pool.selectors, dev, all)) continue;
      if (owner == nullptr) {
        owner = &pool;
        out.devices[pool.name].push_back(dev.name);
      } else {
        out.warnings.push_back(dev.name + " matches pools " + owner->name + " and " + pool.name +
                               "; it goes to " + owner->name + " (first match wins)");
      }
    }
  }
  return out;
}

}  // namespace rdmak8s::dp
