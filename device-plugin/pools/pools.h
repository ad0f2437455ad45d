// Pool membership: which discovered RDMA device belongs to which configured pool.
//
// A device belongs to the first pool whose selectors (node/selectors.h) all match it (config
// order); when a later pool would also have matched, MatchPools reports an overlap warning
// naming both pools. Pure functions over values; no I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "device-plugin/config/config.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::dp {

struct PoolMatch {
  // pool name -> rdma_dev names, in discovery order (sorted by name). Every pool has an entry.
  std::map<std::string, std::vector<std::string>> devices;
  std::vector<std::string> warnings;  // "mlx5_1 matches pools a and b; it goes to a"
};

PoolMatch MatchPools(const PluginConfig& config, const std::vector<RdmaDevice>& all);

}  // namespace rdmak8s::dp
