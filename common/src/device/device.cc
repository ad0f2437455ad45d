#include "rdmak8s/device/device.h"

#include <cctype>

namespace rdmak8s {

std::string_view TransportName(Transport t) {
  switch (t) {
    case Transport::kIb: return "ib";
    case Transport::kRoce: return "roce";
    case Transport::kIwarp: return "iwarp";
    case Transport::kUnknown: return "unknown";
  }
  return "unknown";
}

Transport TransportOf(NodeType node_type, std::string_view first_link_layer) {
  if (node_type == NodeType::kRnic) return Transport::kIwarp;
  if (node_type != NodeType::kCa && node_type != NodeType::kSwitch && node_type != NodeType::kRouter) {
    return Transport::kUnknown;
  }
  if (first_link_layer == "InfiniBand") return Transport::kIb;
  if (first_link_layer == "Ethernet") return Transport::kRoce;
  return Transport::kUnknown;
}

bool IsPcieRootName(std::string_view name) {
  if (name.size() < 10 || name.substr(0, 3) != "pci") return false;
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos || colon < 7 || name.size() - colon - 1 != 2) return false;
  for (size_t i = 3; i < name.size(); ++i) {
    if (i != colon && std::isxdigit(static_cast<unsigned char>(name[i])) == 0) return false;
  }
  return true;
}

// The names drivers/infiniband/core/sysfs.c prints after the number in `node_type`.
std::string_view NodeTypeName(NodeType t) {
  switch (t) {
    case NodeType::kCa: return "CA";
    case NodeType::kSwitch: return "switch";
    case NodeType::kRouter: return "router";
    case NodeType::kRnic: return "RNIC";
    case NodeType::kUsnic: return "usNIC";
    case NodeType::kUsnicUdp: return "usNIC UDP";
    case NodeType::kUnspecified: return "unspecified";
    case NodeType::kUnknown: return "<unknown>";
  }
  return "<unknown>";
}

std::string_view ParentKindName(ParentKind k) {
  switch (k) {
    case ParentKind::kPci: return "pci";
    case ParentKind::kAuxiliary: return "auxiliary";
    case ParentKind::kVirtual: return "virtual";
    case ParentKind::kUnknown: return "unknown";
  }
  return "unknown";
}

// enum ib_port_state names as sysfs `ports/N/state` prints them.
std::string_view PortStateName(PortState s) {
  switch (s) {
    case PortState::kNop: return "NOP";
    case PortState::kDown: return "DOWN";
    case PortState::kInit: return "INIT";
    case PortState::kArmed: return "ARMED";
    case PortState::kActive: return "ACTIVE";
    case PortState::kActiveDefer: return "ACTIVE_DEFER";
  }
  return "UNKNOWN";
}

std::string_view GidTypeName(GidType t) {
  switch (t) {
    case GidType::kIb: return "IB";
    case GidType::kRoceV1: return "RoCE v1";
    case GidType::kRoceV2: return "RoCE v2";
    case GidType::kUnknown: return "unknown";
  }
  return "unknown";
}

const Port* RdmaDevice::FindPort(uint32_t port_num) const {
  for (const Port& p : ports) {
    if (p.port_num == port_num) return &p;
  }
  return nullptr;
}

const CharDevice* RdmaDevice::FindCharDevice(CharDeviceKind kind, uint32_t port_num) const {
  for (const CharDevice& c : char_devices) {
    if (c.kind == kind && c.port_num == port_num) return &c;
  }
  return nullptr;
}

}  // namespace rdmak8s
