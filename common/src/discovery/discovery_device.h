// Discovery's device assembly: one RDMA device from its class/infiniband entry, its bus device,
// its ports and the per-call indexes, in named steps. Internal to rdmak8s_common.
#pragma once

#include <string>

#include "discovery/discovery_context.h"
#include "rdmak8s/discovery/verbs.h"

namespace rdmak8s::internal::discovery {

// class/infiniband/<name> and everything it leads to (bus device, PCI function, ports, netdevs,
// char devices), as RdmaDevice. kNotFound when the device is gone (hot-unplug); any other error
// names the path that could not be read. Thread safe on one ctx.
StatusOr<RdmaDevice> ReadDevice(Context& ctx, const std::string& name);

// Adds what libibverbs says of `d` (VerbsAttrs; fw_ver when sysfs had none). A device verbs cannot
// see or query keeps its sysfs view. `verbs` may be null: nothing to add.
void Enrich(VerbsQuery* verbs, RdmaDevice& d);

}  // namespace rdmak8s::internal::discovery
