// The one rule for whether an RDMA port can carry a pod's traffic now: the device plugin's and
// the DRA driver's health (node/health.h), the node check (inspect/check_device.h) and the CNI's
// port choice and ADD check (cni/device_resolver.h) all ask it.
//
// A port is usable when
//   - its `state` is ACTIVE (ports/<n>/state, enum ib_port_state),
//   - its `phys_state` is LinkUp (ports/<n>/phys_state, enum ib_port_phys_state: 5), and
//   - for RoCE and iWARP, its netdev is up (class/net/<netdev>/operstate).
// An unknown netdev state counts as up: on mlx5, irdma, bnxt_re, rxe, siw and cxgb4 a RoCE/iWARP
// port is ACTIVE only while its netdev has carrier, so ACTIVE already says most of it, and a
// missing attribute must not make a port unusable. InfiniBand ports have no netdev input (an
// IPoIB netdev being down does not stop verbs traffic). Pure: the caller reads what it needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rdmak8s/device/device.h"

namespace rdmak8s {

// include/rdma/ib_verbs.h enum ib_port_phys_state: IB_PORT_PHYS_STATE_LINK_UP.
inline constexpr uint32_t kPhysStateLinkUp = 5;

// "" when `port` of a `transport` device is usable; otherwise the first reason it is not, in
// the kernel's words: "state DOWN", "phys_state Polling" (the number when sysfs gave no name),
// "netdev eth0 down" (`netdev` names the port's netdev; "netdev down" without a name).
// `netdev_up`: the state of that netdev, nullopt when unknown (counts as up); ignored for kIb.
std::string PortUnusableReason(Transport transport, const Port& port,
                               std::optional<bool> netdev_up, std::string_view netdev = {});

// The netdev a RoCE/iWARP port sits on: the port's first netdev (its upper devices follow it),
// else the device's first; "" when sysfs shows none.
std::string PortNetdev(const RdmaDevice& dev, const Port& port);

// <sysfs_root>/class/net/<netdev>/operstate: "up"/"unknown" -> true (virtual netdevs without
// carrier report "unknown"), "down"/"lowerlayerdown"/"notpresent"/"dormant" -> false,
// unreadable or anything else -> nullopt.
std::optional<bool> ReadNetdevUp(const std::string& sysfs_root, std::string_view netdev);

}  // namespace rdmak8s
