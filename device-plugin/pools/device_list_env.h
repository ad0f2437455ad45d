// Which device-list variables (NCCL_IB_HCA, UCX_NET_DEVICES) a pool must leave out of its
// Allocate answers because another pool of the configuration opts into them too.
#pragma once

#include <set>
#include <string>

#include "device-plugin/config/config.h"

namespace rdmak8s::dp {

// The device-list variables `pool` opts into (NCCL_IB_HCA with ncclEnv, UCX_NET_DEVICES with
// ucxEnv) that another pool of `config` opts into too. No pool writes those: kubelet merging the
// Allocate answers of a container given devices of two such pools keeps one pool's value (it
// logs "Environment variable has conflicting setting" and starts the container), and NCCL or UCX
// would silently use one pool's devices. Unset, they use every device the container has:
// libibverbs lists only devices whose /dev/infiniband/uverbsN exists (rdma-core
// try_access_device), and a container has exactly the nodes of what it was given, from every
// pool. Each pool's own list stays in its RDMAK8S_<POOL>_DEVICES.
std::set<std::string> SharedDeviceListEnv(const PluginConfig& config, const PoolConfig& pool);

}  // namespace rdmak8s::dp
