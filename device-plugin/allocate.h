// What a container gets for a set of device IDs of one pool (the Allocate answer).
//
// Device nodes per transport (host path under PoolState::dev_root, container path always the
// canonical /dev/infiniband/<name>):
//   ib:    uverbsN, every umadN of the device, rdma_cm; issmN only with allocate.issm
//   roce:  uverbsN, rdma_cm; umadN only with allocate.roceUmad and when the kernel made one
//   iwarp: uverbsN, rdma_cm
// With CDI on, the device nodes are left to the runtime: cdi_devices names
// "<prefix>/<pool>=<rdma_dev>" instead (see cdi_spec.h).
// Env: RDMAK8S_<POOL>_DEVICES=<dev,dev>; NCCL_IB_HCA==<dev,dev> and
// UCX_NET_DEVICES=<dev:port,...> when the pool opts in and is the only pool that does
// (SharedDeviceListEnv); allocate.env as given.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "device-plugin/pool_state.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dp {

struct CharDeviceRef {
  std::string name;            // "uverbs0"
  std::string host_path;       // "<dev_root>/infiniband/uverbs0"
  std::string container_path;  // "/dev/infiniband/uverbs0"
};

// The char devices `dev` needs in a container under `options`, rdma_cm included when present.
std::vector<CharDeviceRef> CharDevicesFor(const RdmaDevice& dev, const AllocateOptions& options,
                                          const std::string& dev_root);

// kInvalidArgument for an ID the pool does not advertise; kFailedPrecondition when the device
// behind an ID is unhealthy (kubelet raced a health update), naming the device and why.
StatusOr<v1beta1::ContainerAllocateResponse> BuildContainerResponse(
    const PoolState& state, const std::vector<std::string>& ids);

// The env every allocation of `devs` gets under `options`: options.extra_env, then
// NCCL_IB_HCA==<dev,dev> and UCX_NET_DEVICES=<dev:port,...> when opted in (the device plugin
// adds its pool's RDMAK8S_<POOL>_DEVICES on top; the DRA driver uses this as is).
std::map<std::string, std::string> AllocationEnv(const std::vector<const RdmaDevice*>& devs,
                                                 const AllocateOptions& options);

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
