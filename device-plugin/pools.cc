#include "device-plugin/pools.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace rdmak8s::dp {

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

PoolMatch MatchPools(const PluginConfig& config, const std::vector<RdmaDevice>& all) {
  PoolMatch out;
  for (const auto& pool : config.pools) out.devices[pool.name];
  for (const auto& dev : all) {
    const PoolConfig* owner = nullptr;
    for (const auto& pool : config.pools) {
      if (!SelectorsMatch(pool.selectors, dev, all)) continue;
      if (owner == nullptr) {
        owner = &pool;
        out.devices[pool.name].push_back(dev.name);
      } else {
        out.warnings.push_back(dev.name + " matches pools " + owner->name + " and " + pool.name +
                               "; it goes to " + owner->name + " (first match wins)");
      }
    }
  }
  return out;
}

}  // namespace rdmak8s::dp
