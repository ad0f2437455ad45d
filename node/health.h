// Device health as kubelet sees it ("Healthy" | "Unhealthy"), decided from the device model.
//
// A port is usable when it is ACTIVE, its physical state is LinkUp and, for RoCE/iWARP, its
// netdev is up. A device is Healthy while at least one of its ports is usable (a dual-port HCA
// with one cable out still serves pods on the other port); Unhealthy otherwise, with every
// port's reason, or when it disappeared (decided by the caller). A netdev whose
// state cannot be read counts as up: health must not flap on a missing attribute.
// Pure except ReadNetdevUp, which reads sysfs.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rdmak8s/device.h"

namespace rdmak8s::node {

struct DeviceHealth {
  bool healthy = true;
  std::string reason;  // why unhealthy: "port 1 state DOWN", "netdev eth0 down", "device gone"
  friend bool operator==(const DeviceHealth&, const DeviceHealth&) = default;
};

// nullopt = unknown.
using NetdevUpFn = std::function<std::optional<bool>(std::string_view netdev)>;

DeviceHealth EvaluateHealth(const RdmaDevice& dev, const NetdevUpFn& netdev_up);

// <sysfs_root>/class/net/<netdev>/operstate: "up"/"unknown" -> true (virtual netdevs without
// carrier report "unknown"), "down"/"lowerlayerdown"/"notpresent"/"dormant" -> false,
// unreadable -> nullopt.
std::optional<bool> ReadNetdevUp(const std::string& sysfs_root, std::string_view netdev);

}  // namespace rdmak8s::node
