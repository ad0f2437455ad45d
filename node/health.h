// Device health as kubelet sees it ("Healthy" | "Unhealthy"), decided from the device model.
//
// Whether a port is usable is the one rule of rdmak8s/device/port_usable.h (ACTIVE, LinkUp and, for
// RoCE/iWARP, the port's netdev up; a netdev whose state cannot be read counts as up: health
// must not flap on a missing attribute). A device is Healthy while at least one of its ports is
// usable (a dual-port HCA with one cable out still serves pods on the other port); Unhealthy
// otherwise, with every port's reason, or when it disappeared (decided by the caller). Pure; the
// caller reads netdev states (ReadNetdevUp, port_usable.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "rdmak8s/device/device.h"
#include "rdmak8s/device/port_usable.h"

namespace rdmak8s::node {

struct DeviceHealth {
  bool healthy = true;
  std::string reason;  // why unhealthy: "port 1 state DOWN", "netdev eth0 down", "device gone"
  friend bool operator==(const DeviceHealth&, const DeviceHealth&) = default;
};

// nullopt = unknown.
using NetdevUpFn = std::function<std::optional<bool>(std::string_view netdev)>;

DeviceHealth EvaluateHealth(const RdmaDevice& dev, const NetdevUpFn& netdev_up);

}  // namespace rdmak8s::node
