// The RoCE checks of one device (docs/node-check.md): port ACTIVE; on the PF netdev (where DCB
// and ECN live, check_dcb.h): DCB trust, the DSCP -> priority entries the policy's ToS / traffic
// class use, PFC on exactly the priorities RoCE uses (plus qos.pfc and --allow-pfc), ECN on them
// where the driver exposes it; per port: the netdev MTU against the active RDMA MTU (and the
// fabric's, --fabric-mtu), and a RoCE v2 GID for every address of the port's netdevs.
//
// Reads through env's DCB and route netlink roles and sysfs; each problem is one ✘ line, never
// an early return: the operator sees everything at once.
#pragma once

#include "check_env.h"
#include "check_policy.h"
#include "check_result.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::inspect {

void CheckRoceDevice(const RdmaDevice& dev, const CheckPolicy& policy, const CheckEnv& env,
                     CheckReport& report);

// The RDMA MTU (bytes, 256..4096) a netdev MTU leaves room for: the kernel's iboe_get_mtu
// (include/rdma/ib_addr.h) takes off GRH, UDP, BTH, XRC, AtomicETH and ICRC (96 bytes).
uint32_t RdmaMtuForNetdevMtu(uint32_t netdev_mtu);
// The netdev MTU that RDMA MTU `rdma_mtu` needs (rdma_mtu + 96).
uint32_t NetdevMtuForRdmaMtu(uint32_t rdma_mtu);

}  // namespace rdmak8s::inspect
