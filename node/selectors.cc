#include "node/selectors.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/numbers.h"
#include "rdmak8s/device/device_id.h"

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
using json_reader::CheckKeys;
using json_reader::Index;
using json_reader::Invalid;
using json_reader::NotA;

namespace {

// A non-empty list of non-empty strings.
StatusOr<std::vector<std::string>> NonEmptyStrings(const json& j, const std::string& path) {
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> out, json_reader::StringList(j, path));
  if (out.empty()) return Invalid(path, "must not be empty (leave the selector out to match all)");
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].empty()) return Invalid(Index(path, i), "must not be empty");
  }
  return out;
}

// 4-digit hex PCI IDs ("0x15B3" or "15b3"), normalised in place to lower case without 0x.
Status CheckHexIds(std::vector<std::string>& ids, const std::string& path, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string_view s = ids[i];
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    const std::string at = Index(path, i);
    const std::string bad = "\"" + ids[i] + "\" is not a 4-digit hex PCI " + what;
    if (s.size() != 4) return Invalid(at, bad);
    StatusOr<uint16_t> v = ParseUnsigned<uint16_t>(s, at, NumberBase::kHex);
    if (!v.ok()) return Invalid(at, bad);
    ids[i] = Hex4(*v);
  }
  return Status::Ok();
}

// Every value one of `allowed`.
Status CheckOneOf(const std::vector<std::string>& vals, const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
  for (size_t i = 0; i < vals.size(); ++i) {
    if (std::find(allowed.begin(), allowed.end(), vals[i]) != allowed.end()) continue;
    std::vector<std::string_view> sorted(allowed);
    std::sort(sorted.begin(), sorted.end());
    std::string list;
    for (std::string_view a : sorted) list += (list.empty() ? "" : ", ") + std::string(a);
    return Invalid(Index(path, i), "\"" + vals[i] + "\" is not one of " + list);
  }
  return Status::Ok();
}

}  // namespace

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
  RDMAK8S_RETURN_IF_ERROR(CheckKeys(j, path,
                                    {"vendors", "deviceIDs", "drivers", "pciAddresses",
                                     "rdmaDevices", "netdevs", "linkTypes", "transports",
                                     "numaNodes", "isVF", "pfNames"}));
  Selectors s;
  auto list = [&](const char* key, std::vector<std::string>& out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    RDMAK8S_ASSIGN_OR_RETURN(out, NonEmptyStrings(j[key], path + "." + key));
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
      return Invalid(Index(path + ".pciAddresses", i),
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
    if (!n.is_array()) return NotA(p, "a list", n);
    if (n.empty()) return Invalid(p, "must not be empty (leave the selector out to match all)");
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].is_number_integer() || n[i].get<int64_t>() < -1 || n[i].get<int64_t>() > 1023) {
        return Invalid(Index(p, i),
                   "must be a NUMA node number (0..1023, or -1 for unknown), got " + n[i].dump());
      }
      s.numa_nodes.push_back(n[i].get<int>());
    }
  }
  if (j.contains("isVF") && !j["isVF"].is_null()) {
    RDMAK8S_ASSIGN_OR_RETURN(s.is_vf, json_reader::BoolAt(j, path, "isVF", false));
  }
  return s;
}

}  // namespace rdmak8s::node
