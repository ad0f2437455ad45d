#include "device-plugin/pools/device_list_env.h"

namespace rdmak8s::dp {

std::set<std::string> SharedDeviceListEnv(const PluginConfig& config, const PoolConfig& pool) {
  std::set<std::string> out;
  for (const auto& other : config.pools) {
    if (other.name == pool.name) continue;
    if (pool.allocate.nccl_env && other.allocate.nccl_env) out.insert("NCCL_IB_HCA");
    if (pool.allocate.ucx_env && other.allocate.ucx_env) out.insert("UCX_NET_DEVICES");
  }
  return out;
}

}  // namespace rdmak8s::dp
