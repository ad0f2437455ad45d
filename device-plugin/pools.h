// Pool membership: which discovered RDMA device belongs to which configured pool.
//
// A device belongs to the first pool whose selectors all match it (config order); when a later
// pool would also have matched, MatchPools reports an overlap warning naming both pools.
// Pure functions over values; no I/O.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "device-plugin/config.h"
#include "rdmak8s/device.h"

namespace rdmak8s::dp {

struct PoolMatch {
  // pool name -> rdma_dev names, in discovery order (sorted by name). Every pool has an entry.
  std::map<std::string, std::vector<std::string>> devices;
  std::vector<std::string> warnings;  // "mlx5_1 matches pools a and b; it goes to a"
};

// `all` is the whole discovered set (needed for pfNames: a VF's PF netdevs).
bool SelectorsMatch(const Selectors& s, const RdmaDevice& dev, const std::vector<RdmaDevice>& all);
PoolMatch MatchPools(const PluginConfig& config, const std::vector<RdmaDevice>& all);

// "infiniband" | "ethernet" | "" from the first port's link_layer.
std::string LinkTypeKey(const RdmaDevice& dev);

}  // namespace rdmak8s::dp
