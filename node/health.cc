#include "node/health.h"

namespace rdmak8s::node {

DeviceHealth EvaluateHealth(const RdmaDevice& dev, const NetdevUpFn& netdev_up) {
  if (dev.ports.empty()) return {false, "no ports"};
  const bool ethernet = dev.transport == Transport::kRoce || dev.transport == Transport::kIwarp;
  std::string reasons;
  for (const auto& port : dev.ports) {
    const std::string netdev = ethernet ? PortNetdev(dev, port) : "";
    std::optional<bool> up;
    if (!netdev.empty() && netdev_up) up = netdev_up(netdev);
    const std::string why = PortUnusableReason(dev.transport, port, up, netdev);
    if (why.empty()) return {true, ""};  // one usable port keeps the device usable
    reasons += (reasons.empty() ? "" : "; ") + ("port " + std::to_string(port.port_num) + " " + why);
  }
  return {false, reasons};
}

}  // namespace rdmak8s::node
