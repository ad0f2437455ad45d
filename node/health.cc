#include "node/health.h"

#include "rdmak8s/sysfs_attr.h"

namespace rdmak8s::node {

namespace {
// include/rdma/ib_verbs.h enum ib_port_phys_state: IB_PORT_PHYS_STATE_LINK_UP.
constexpr uint32_t kPhysStateLinkUp = 5;
}  // namespace

DeviceHealth EvaluateHealth(const RdmaDevice& dev, const NetdevUpFn& netdev_up) {
  if (dev.ports.empty()) return {false, "no ports"};
  const bool ethernet = dev.transport == Transport::kRoce || dev.transport == Transport::kIwarp;
  std::string reasons;
  for (const auto& port : dev.ports) {
    std::string p = "port " + std::to_string(port.port_num);
    std::string why;
    if (port.state != PortState::kActive) {
      why = p + " state " + std::string(PortStateName(port.state));
    } else if (port.phys_state != kPhysStateLinkUp) {
      why = p + " phys_state " +
            (port.phys_state_name.empty() ? std::to_string(port.phys_state) : port.phys_state_name);
    } else if (ethernet && netdev_up) {
      // The port's first netdev is the one the RDMA port sits on; upper devices follow it.
      const std::vector<std::string>& nds = port.netdevs.empty() ? dev.netdevs : port.netdevs;
      if (!nds.empty()) {
        std::optional<bool> up = netdev_up(nds.front());
        if (up.has_value() && !*up) why = p + " netdev " + nds.front() + " down";
      }
    }
    if (why.empty()) return {true, ""};  // one usable port keeps the device usable
    reasons += (reasons.empty() ? "" : "; ") + why;
  }
  return {false, reasons};
}

std::optional<bool> ReadNetdevUp(const std::string& sysfs_root, std::string_view netdev) {
  StatusOr<std::string> read = ReadSysfsAttr(sysfs_root + "/class/net/" + std::string(netdev) + "/operstate");
  if (!read.ok()) return std::nullopt;
  const std::string& state = *read;
  if (state == "up" || state == "unknown") return true;
  if (state == "down" || state == "lowerlayerdown" || state == "notpresent" ||
      state == "dormant") {
    return false;
  }
  return std::nullopt;
}

}  // namespace rdmak8s::node
