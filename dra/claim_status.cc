// Builds one device's claim status entry (dra/claim_status.h).
#include "dra/claim_status.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace rdmak8s::dra {

namespace {

using nlohmann::json;

constexpr char kWaitingForCni[] = "WaitingForCni";
constexpr char kNotAttachedMessage[] =
    "the rdmak8s CNI has not attached the device to the pod yet (a pod that uses the device "
    "without it never has)";

struct Condition {
  std::string type, status, reason, message;
};

// The port the status describes: the first an attachment used, else the device's first.
const Port* StatusPort(const RdmaDevice& dev, const std::vector<AttachmentFacts>& attachments) {
  if (dev.ports.empty()) return nullptr;
  if (!attachments.empty() && !attachments[0].ports.empty()) {
    for (const auto& p : dev.ports) {
      if (p.port_num == attachments[0].ports[0]) return &p;
    }
  }
  return &dev.ports[0];
}

std::string Hex4(uint16_t v) {
  char out[8];
  std::snprintf(out, sizeof(out), "0x%04x", v);
  return out;
}

Condition PortActive(const DeviceStatusInput& in, const Port* port) {
  if (!in.found) return {kConditionPortActive, "False", "DeviceGone", "the device is no longer on the node"};
  if (port == nullptr) return {kConditionPortActive, "False", "NoPort", in.found->dev.name + " has no port"};
  const std::string what = in.found->dev.name + " port " + std::to_string(port->port_num) + " is " +
                           std::string(PortStateName(port->state)) +
                           (port->phys_state_name.empty() ? "" : " (" + port->phys_state_name + ")");
  if (port->state == PortState::kActive && (port->phys_state == 0 || port->phys_state == 5)) {
    return {kConditionPortActive, "True", "PortActive", what};
  }
  std::string why = what;
  if (in.found->dev.transport == Transport::kIb &&
      (port->state == PortState::kInit || port->state == PortState::kArmed)) {
    why += ": the subnet manager has not brought it up yet";
  }
  return {kConditionPortActive, "False", "PortNotActive", why};
}

Condition GidPresent(const std::vector<AttachmentFacts>& attachments) {
  if (attachments.empty()) return {kConditionGidPresent, "Unknown", kWaitingForCni, kNotAttachedMessage};
  const AttachmentFacts& a = attachments[0];
  if (a.gid.empty() || !a.gid_index) {
    return {kConditionGidPresent, "False", "NoAddress",
            "pod interface " + a.ifname + " had no IP address at ADD: no RoCE v2 GID to use"};
  }
  return {kConditionGidPresent, "True", "GidPresent",
          "RoCE v2 GID " + a.gid + " at index " + std::to_string(*a.gid_index) + " for " +
              (a.ips.empty() ? std::string("the pod's address") : a.ips[0])};
}

Condition QosApplied(const std::vector<AttachmentFacts>& attachments) {
  if (attachments.empty()) return {kConditionQosApplied, "Unknown", kWaitingForCni, kNotAttachedMessage};
  std::vector<std::string> all;
  for (const auto& a : attachments) {
    for (const auto& q : a.qos) {
      if (std::find(all.begin(), all.end(), q) == all.end()) all.push_back(q);
    }
  }
  if (all.empty()) return {kConditionQosApplied, "True", "NoneRequested", "the network asks for no QoS settings"};
  std::string list;
  for (const auto& q : all) list += (list.empty() ? "" : ", ") + q;
  return {kConditionQosApplied, "True", "Applied", "applied at ADD: " + list};
}

Condition PKeyMember(const std::vector<AttachmentFacts>& attachments, const Port* port) {
  if (attachments.empty()) return {kConditionPKeyMember, "Unknown", kWaitingForCni, kNotAttachedMessage};
  const AttachmentFacts& a = attachments[0];
  if (!a.pkey) return {kConditionPKeyMember, "True", "NoPKeyRequested", "the network names no PKey"};
  // The membership bit (0x8000: full) aside, the partition is the low 15 bits.
  const bool member = port != nullptr && std::any_of(port->pkeys.begin(), port->pkeys.end(), [&](uint16_t k) {
                        return (k & 0x7fff) == (*a.pkey & 0x7fff);
                      });
  if (member) return {kConditionPKeyMember, "True", "Member", "PKey " + Hex4(*a.pkey) + " is in the port's PKey table"};
  return {kConditionPKeyMember, "False", "NotMember",
          "PKey " + Hex4(*a.pkey) + " is not in the port's PKey table (the subnet manager's partitions)"};
}

json Data(const DeviceStatusInput& in, const Port* port) {
  json d = json::object();
  if (!in.found) return d;
  const RdmaDevice& dev = in.found->dev;
  d["rdmaDev"] = dev.name;
  d["transport"] = std::string(TransportName(dev.transport));
  if (port != nullptr) {
    d["port"] = port->port_num;
    d["portState"] = std::string(PortStateName(port->state));
    if (!port->phys_state_name.empty()) d["physState"] = port->phys_state_name;
    if (dev.transport == Transport::kIb) {
      json pkeys = json::array();
      for (size_t i = 0; i < port->pkeys.size() && i < kMaxStatusPkeys; ++i) pkeys.push_back(Hex4(port->pkeys[i]));
      d["pkeys"] = pkeys;
    }
    if (!port->netdevs.empty()) d["netdev"] = port->netdevs[0];
  }
  for (const auto& c : dev.char_devices) {
    if (c.kind == CharDeviceKind::kUverbs) d["uverbs"] = c.ContainerPath();
  }
  if (!dev.node_guid.empty()) d["nodeGuid"] = dev.node_guid;
  if (!d.contains("netdev") && !dev.netdevs.empty()) d["netdev"] = dev.netdevs[0];
  d["numaNode"] = dev.numa_node();
  if (dev.parent.pci && !dev.parent.pci->pcie_root.empty()) d["pcieRoot"] = dev.parent.pci->pcie_root;
  if (!in.attachments.empty()) {
    const AttachmentFacts& a = in.attachments[0];
    json ips = json::array();
    for (const auto& att : in.attachments) {
      for (const auto& ip : att.ips) {
        if (ips.size() < kMaxAttachmentIps && std::find(ips.begin(), ips.end(), ip) == ips.end()) ips.push_back(ip);
      }
    }
    d["podIPs"] = ips;
    d["interfaceName"] = a.ifname;
    if (!a.gid.empty()) d["gid"] = a.gid;
    if (a.gid_index) d["gidIndex"] = *a.gid_index;
  }
  return d;
}

// `previous`' lastTransitionTime of `type` when its status is still `status`.
std::string TransitionTime(const json& previous, const Condition& c, const std::string& now) {
  if (!previous.is_object() || !previous.contains("conditions") || !previous["conditions"].is_array()) return now;
  for (const auto& p : previous["conditions"]) {
    if (p.is_object() && p.value("type", "") == c.type && p.value("status", "") == c.status &&
        p.contains("lastTransitionTime") && p["lastTransitionTime"].is_string()) {
      return p["lastTransitionTime"].get<std::string>();
    }
  }
  return now;
}

}  // namespace

std::string Rfc3339(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

std::optional<size_t> EntryIndexOf(const json& current, const AllocatedDevice& device) {
  std::optional<size_t> found;
  if (!current.is_array()) return found;
  for (size_t i = 0; i < current.size(); ++i) {
    const json& e = current[i];
    if (e.is_object() && e.value("pool", "") == device.pool && e.value("device", "") == device.device &&
        e.value("shareID", "") == device.share_id) {
      found = i;
    }
  }
  return found;
}

json EntryOf(const json& current, const AllocatedDevice& device) {
  const std::optional<size_t> i = EntryIndexOf(current, device);
  return i ? current[*i] : json();
}

json BuildDeviceStatus(const DeviceStatusInput& in, const json& previous, const std::string& now) {
  const Port* port = in.found ? StatusPort(in.found->dev, in.attachments) : nullptr;
  std::vector<Condition> conditions;
  conditions.push_back(PortActive(in, port));
  const Transport transport = in.found ? in.found->dev.transport : Transport::kUnknown;
  if (transport == Transport::kRoce) conditions.push_back(GidPresent(in.attachments));
  conditions.push_back(QosApplied(in.attachments));
  if (transport == Transport::kIb) conditions.push_back(PKeyMember(in.attachments, port));
  Condition ready{kConditionReady, "True", "Ready", "prepared; the port is active"};
  for (const auto& c : conditions) {
    if (c.status == "False") {
      ready = {kConditionReady, "False", c.reason, c.type + ": " + c.message};
      break;
    }
  }
  conditions.insert(conditions.begin(), ready);

  json entry = {{"driver", in.driver}, {"pool", in.allocated.pool}, {"device", in.allocated.device}};
  if (!in.allocated.share_id.empty()) entry["shareID"] = in.allocated.share_id;
  json list = json::array();
  for (const auto& c : conditions) {
    list.push_back({{"type", c.type},
                    {"status", c.status},
                    {"reason", c.reason},
                    {"message", c.message},
                    {"lastTransitionTime", TransitionTime(previous, c, now)}});
  }
  entry["conditions"] = list;
  json data = Data(in, port);
  if (data.dump().size() > kMaxStatusDataBytes) data.erase("pkeys");  // the only list that can grow
  if (!data.empty()) entry["data"] = data;
  if (!in.attachments.empty()) {
    const AttachmentFacts& a = in.attachments[0];
    json net = {{"interfaceName", a.ifname}, {"ips", a.ips}};
    if (!a.hardware_address.empty()) net["hardwareAddress"] = a.hardware_address;
    entry["networkData"] = net;
  }
  return entry;
}

}  // namespace rdmak8s::dra
