// The kubelet Allocate answer for a set of device IDs of one pool (device nodes, env, CDI names).
//
// Which char devices and which env a device gets is the node core's rule (node/allocate.h); this
// adds what only the device plugin knows: the pool's IDs, its RDMAK8S_<POOL>_DEVICES, and which
// device-list variables no pool may write because another pool opts into them too. With CDI on,
// the device nodes are left to the runtime: cdi_devices names "<prefix>/<pool>=<rdma_dev>"
// instead (see pool_cdi_spec.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "device-plugin/pools/pool_state.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "node/allocate.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dp {

// kInvalidArgument for an ID the pool does not advertise; kFailedPrecondition when the device
// behind an ID is unhealthy (kubelet raced a health update), naming the device and why.
StatusOr<v1beta1::ContainerAllocateResponse> BuildContainerResponse(
    const PoolState& state, const std::vector<std::string>& ids);

// The device-list variables `pool` opts into (NCCL_IB_HCA with ncclEnv, UCX_NET_DEVICES with
// ucxEnv) that another pool of `config` opts into too. No pool writes those: kubelet merging the
// Allocate answers of a container given devices of two such pools keeps one pool's value (it
// logs "Environment variable has conflicting setting" and starts the container), and NCCL or UCX
// would silently use one pool's devices. Unset, they use every device the container has:
// libibverbs lists only devices whose /dev/infiniband/uverbsN exists (rdma-core
// try_access_device), and a container has exactly the nodes of what it was given, from every
// pool. Each pool's own list stays in its RDMAK8S_<POOL>_DEVICES.
std::set<std::string> SharedDeviceListEnv(const PluginConfig& config, const PoolConfig& pool);

// The distinct rdma_devs behind `ids`, in first-seen order (no validation).
std::vector<std::string> DevicesOf(const PoolState& state, const std::vector<std::string>& ids);

}  // namespace rdmak8s::dp
