#include "node/selectors.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "node/json_schema.h"
#include "rdmak8s/device_id.h"

namespace rdmak8s::node {

namespace {

template <typename T>
bool Contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Hex4(uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04x", v);
  return buf;
}

const PciInfo* Pci(const RdmaDevice& dev) { return dev.parent.pci ? &*dev.parent.pci : nullptr; }

// Netdevs of the PF behind `dev`: for a VF the PF's RDMA device's netdevs, for anything else
// its own.
std::vector<std::string> PfNetdevs(const RdmaDevice& dev, const std::vector<RdmaDevice>& all) {
  const PciInfo* pci = Pci(dev);
  if (pci == nullptr || !pci->is_vf) return dev.netdevs;
  for (const auto& other : all) {
    const PciInfo* opci = Pci(other);
    if (opci != nullptr && opci->address == pci->pf_address && !opci->is_vf) return other.netdevs;
  }
  return {};
}

}  // namespace

using nlohmann::json;
using schema::Bad;
using schema::CheckHexIds;
using schema::CheckKeys;
using schema::CheckOneOf;
using schema::StringList;
using schema::TypeName;

std::string LinkTypeKey(const RdmaDevice& dev) {
  if (dev.ports.empty()) return "";
  std::string ll = dev.ports.front().link_layer;
  for (char& c : ll) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ll;
}

bool SelectorsMatch(const Selectors& s, const RdmaDevice& dev, const std::vector<RdmaDevice>& all) {
  const PciInfo* pci = Pci(dev);
  if (!s.vendors.empty() && (pci == nullptr || !Contains(s.vendors, Hex4(pci->vendor_id)))) {
    return false;
  }
  if (!s.device_ids.empty() && (pci == nullptr || !Contains(s.device_ids, Hex4(pci->device_id)))) {
    return false;
  }
  // Either driver: the parent's (ice, bnxt_en, mlx5_core) or the RDMA device's own (irdma,
  // bnxt_re, mlx5_ib); for rxe/siw both are the soft driver.
  if (!s.drivers.empty() && !Contains(s.drivers, dev.driver) &&
      (dev.rdma_driver.empty() || !Contains(s.drivers, dev.rdma_driver))) {
    return false;
  }
  if (!s.pci_addresses.empty() && (pci == nullptr || !Contains(s.pci_addresses, pci->address))) {
    return false;
  }
  if (!s.rdma_devices.empty() && !Contains(s.rdma_devices, dev.name)) return false;
  if (!s.netdevs.empty()) {
    bool any = false;
    for (const auto& n : dev.netdevs) any = any || Contains(s.netdevs, n);
    if (!any) return false;
  }
  if (!s.link_types.empty() && !Contains(s.link_types, LinkTypeKey(dev))) return false;
  if (!s.transports.empty() && !Contains(s.transports, std::string(TransportName(dev.transport)))) {
    return false;
  }
  if (!s.numa_nodes.empty() && !Contains(s.numa_nodes, dev.numa_node())) return false;
  if (s.is_vf.has_value() && (pci != nullptr && pci->is_vf) != *s.is_vf) return false;
  if (!s.pf_names.empty()) {
    bool any = false;
    for (const auto& n : PfNetdevs(dev, all)) any = any || Contains(s.pf_names, n);
    if (!any) return false;
  }
  return true;
}

StatusOr<Selectors> ParseSelectors(const json& j, const std::string& path) {
  if (!j.is_object()) return Bad(path, "must be an object, got " + TypeName(j));
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, path,
                                    {"vendors", "deviceIDs", "drivers", "pciAddresses",
                                     "rdmaDevices", "netdevs", "linkTypes", "transports",
                                     "numaNodes", "isVF", "pfNames"}));
  Selectors s;
  auto list = [&](const char* key, std::vector<std::string>& out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    RDMAK8S_ASSIGN_OR_RETURN(out, StringList(j[key], path + "." + key));
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(list("vendors", s.vendors));
  RDMAK8S_RETURN_IF_ERROR(CheckHexIds(s.vendors, path + ".vendors", "vendor ID"));
  RDMAK8S_RETURN_IF_ERROR(list("deviceIDs", s.device_ids));
  RDMAK8S_RETURN_IF_ERROR(CheckHexIds(s.device_ids, path + ".deviceIDs", "device ID"));
  RDMAK8S_RETURN_IF_ERROR(list("drivers", s.drivers));
  RDMAK8S_RETURN_IF_ERROR(list("pciAddresses", s.pci_addresses));
  for (size_t i = 0; i < s.pci_addresses.size(); ++i) {
    // tolower of a negative char (a UTF-8 byte) is undefined: pass it as unsigned char.
    for (char& c : s.pci_addresses[i]) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (!IsPciAddress(s.pci_addresses[i])) {
      return Bad(path + ".pciAddresses[" + std::to_string(i) + "]",
                 "\"" + s.pci_addresses[i] + "\" is not a PCI address like 0000:3b:00.0");
    }
  }
  RDMAK8S_RETURN_IF_ERROR(list("rdmaDevices", s.rdma_devices));
  RDMAK8S_RETURN_IF_ERROR(list("netdevs", s.netdevs));
  RDMAK8S_RETURN_IF_ERROR(list("linkTypes", s.link_types));
  RDMAK8S_RETURN_IF_ERROR(CheckOneOf(s.link_types, path + ".linkTypes", {"infiniband", "ethernet"}));
  RDMAK8S_RETURN_IF_ERROR(list("transports", s.transports));
  RDMAK8S_RETURN_IF_ERROR(CheckOneOf(s.transports, path + ".transports", {"ib", "roce", "iwarp"}));
  RDMAK8S_RETURN_IF_ERROR(list("pfNames", s.pf_names));
  if (j.contains("numaNodes")) {
    const json& n = j["numaNodes"];
    std::string p = path + ".numaNodes";
    if (!n.is_array()) return Bad(p, "must be a list of integers, got " + TypeName(n));
    if (n.empty()) return Bad(p, "must not be empty (leave the selector out to match all)");
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].is_number_integer() || n[i].get<int64_t>() < -1 || n[i].get<int64_t>() > 1023) {
        return Bad(p + "[" + std::to_string(i) + "]",
                   "must be a NUMA node number (0..1023, or -1 for unknown), got " + n[i].dump());
      }
      s.numa_nodes.push_back(n[i].get<int>());
    }
  }
  if (j.contains("isVF")) {
    if (!j["isVF"].is_boolean()) {
      return Bad(path + ".isVF", "must be true or false, got " + j["isVF"].dump());
    }
    s.is_vf = j["isVF"].get<bool>();
  }
  return s;
}

}  // namespace rdmak8s::node
