// Discovery's port reader: link state, rate, LIDs, PKeys and the GID table with each GID's type
// and netdev. Internal to rdmak8s_common.
#pragma once

#include <cstdint>

#include "rdmak8s/device/device.h"
#include "device/sysfs.h"

namespace rdmak8s::internal::discovery {

// class/infiniband/<dev>/ports/<port_num>/{state,phys_state,link_layer,rate,lid,sm_lid,
// lid_mask_count,pkeys/<i>,gids/<i>,gid_attrs/{types,ndevs}/<i>}; `dev` is the device's open
// class directory, `rnic` whether it is an iWARP RNIC (its "IB/RoCE v1" GIDs are neither).
StatusOr<Port> ReadPort(const SysfsDir& dev, uint32_t port_num, bool rnic);

}  // namespace rdmak8s::internal::discovery
