// kubelet's answers for one pool, built from its PoolState: ListAndWatch (every ID with its
// health and NUMA node) and Allocate (device nodes, env, CDI names for a set of IDs). The gRPC
// service (plugin_server.h) sends them; the pool rooms know nothing of the kubelet proto.
//
// Which char devices and which env a device gets is the node core's rule (node/allocate.h); the
// Allocate answer adds what only the device plugin knows: the pool's IDs, its
// RDMAK8S_<POOL>_DEVICES, and the device-list variables left out because another pool opts into
// them too (pools/device_list_env.h). With CDI on, the device nodes are left to the runtime:
// cdi_devices names "<prefix>/<pool>=<rdma_dev>" instead (see pools/pool_cdi_spec.h).
#pragma once

#include <string>
#include <vector>

#include "device-plugin/pools/pool_state.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

// The ListAndWatch answer: Advertised(state), the NUMA node omitted when < 0.
v1beta1::ListAndWatchResponse ToListAndWatch(const PoolState& state);

// The Allocate answer of one container for `ids`. kInvalidArgument for an ID the pool does not
// advertise; kFailedPrecondition when the device behind an ID is unhealthy (kubelet raced a
// health update), naming the device and why.
StatusOr<v1beta1::ContainerAllocateResponse> BuildContainerResponse(
    const PoolState& state, const std::vector<std::string>& ids);

}  // namespace rdmak8s::dp
