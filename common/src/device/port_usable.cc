// The one port-usable rule (port_usable.h) and the netdev state it takes.
#include "rdmak8s/device/port_usable.h"

#include "rdmak8s/device/sysfs_attr.h"

namespace rdmak8s {

std::string PortUnusableReason(Transport transport, const Port& port,
                               std::optional<bool> netdev_up, std::string_view netdev) {
  if (port.state != PortState::kActive) return "state " + std::string(PortStateName(port.state));
  if (port.phys_state != kPhysStateLinkUp) {
    return "phys_state " +
           (port.phys_state_name.empty() ? std::to_string(port.phys_state) : port.phys_state_name);
  }
  const bool ethernet = transport == Transport::kRoce || transport == Transport::kIwarp;
  if (ethernet && netdev_up.has_value() && !*netdev_up) {
    return netdev.empty() ? std::string("netdev down") : "netdev " + std::string(netdev) + " down";
  }
  return "";
}

std::string PortNetdev(const RdmaDevice& dev, const Port& port) {
  if (!port.netdevs.empty()) return port.netdevs.front();
  if (!dev.netdevs.empty()) return dev.netdevs.front();
  return "";
}

std::optional<bool> ReadNetdevUp(const std::string& sysfs_root, std::string_view netdev) {
  StatusOr<std::string> read =
      ReadSysfsAttr(sysfs_root + "/class/net/" + std::string(netdev) + "/operstate");
  if (!read.ok()) return std::nullopt;
  const std::string& state = *read;
  if (state == "up" || state == "unknown") return true;
  if (state == "down" || state == "lowerlayerdown" || state == "notpresent" ||
      state == "dormant") {
    return false;
  }
  return std::nullopt;
}

}  // namespace rdmak8s
