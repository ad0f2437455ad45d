#include "rdmak8s/device/device_lookup.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/device/device_id.h"
#include "rdmak8s/device/pf_netdev.h"
#include "rdmak8s/device/sysfs_attr.h"
#include "device/sysfs.h"

namespace rdmak8s {

namespace {

// The name of what a sysfs `device` link points at: the kernel links a device to its own
// directory, whose last component is the device's name. "" if it is no link or unreadable.
std::string LinkBasename(const std::string& path) {
  StatusOr<std::string> target = internal::ReadLinkPath(path);
  return target.ok() ? Basename(*target) : "";
}

// The one RDMA device under `bus_dir`, which is the bus device `bus`.
StatusOr<std::string> OnlyDeviceOn(const std::string& bus_dir, const std::string& bus) {
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> hits, RdmaDevicesOnBusDir(bus_dir));
  if (hits.empty()) return NotFoundError("no RDMA device on bus device " + bus);
  if (hits.size() > 1) {
    return InvalidArgumentError("several RDMA devices on bus device " + bus + ": " + Join(hits) +
                                "; set deviceID to one RDMA device name");
  }
  return hits[0];
}

// EUI-64 of a MAC "aa:bb:cc:dd:ee:ff" in node_guid's form, "a8bb:ccff:fedd:eeff" (the universal/
// local bit flipped, ff:fe in the middle); "" when `mac` is not six hex bytes.
std::string Eui64OfMac(const std::string& mac) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  // "aa:bb:cc:dd:ee:ff": 17 characters, a colon after each byte but the last.
  if (mac.size() != 17) return "";
  std::array<unsigned, 6> v{};
  for (size_t i = 0; i < 6; ++i) {
    const int hi = hex(mac[i * 3]);
    const int lo = hex(mac[(i * 3) + 1]);
    if (hi < 0 || lo < 0 || (i < 5 && mac[(i * 3) + 2] != ':')) return "";
    v[i] = static_cast<unsigned>((hi * 16) + lo);
  }
  std::array<char, 20> out{};
  std::snprintf(out.data(), out.size(), "%02x%02x:%02xff:fe%02x:%02x%02x", v[0] ^ 0x02U, v[1], v[2],
                v[3], v[4], v[5]);
  return out.data();
}

}  // namespace

StatusOr<std::string> DeviceLookup::OneSoftDeviceOf(const std::string& netdev,
                                                    const std::vector<std::string>& named) const {
  // Soft devices over netdevs of the same name in different network namespaces (every pod's
  // eth0 under containerd, shared RDMA netns mode): `parent` is only a name. rxe and siw derive
  // their node GUID from the netdev's MAC, which tells them apart.
  auto mac = ReadSysfsAttr(Path("class/net/" + netdev + "/address"));
  const std::string guid = mac.ok() ? Eui64OfMac(*mac) : "";
  std::vector<std::string> hits;
  if (!guid.empty()) {
    for (const auto& d : named) {
      auto g = ReadSysfsAttr(Path("class/infiniband/" + d + "/node_guid"));
      if (g.ok() && *g == guid) hits.push_back(d);
    }
  }
  if (hits.size() == 1) return hits[0];
  return InvalidArgumentError("several RDMA devices name netdev " + netdev + " as their parent (" +
                              Join(named) + ") and " +
                              (hits.empty() ? "none" : std::to_string(hits.size())) +
                              " has the node GUID of its MAC (" +
                              (mac.ok() ? *mac : mac.status().message()) +
                              "); set deviceID to one RDMA device name");
}

StatusOr<std::vector<std::string>> RdmaDevicesOnBusDir(const std::string& bus_dir) {
  StatusOr<std::vector<std::string>> names = ListSysfsDir(bus_dir + "/infiniband");
  if (!names.ok() && names.status().code() == StatusCode::kNotFound) {
    return std::vector<std::string>();
  }
  return names;
}

bool DeviceLookup::Exists(const std::string& rel) const {
  return access(Path(rel).c_str(), F_OK) == 0;
}

StatusOr<std::vector<std::string>> DeviceLookup::ListDevices() const {
  return ListSysfsDir(Path("class/infiniband"));
}

StatusOr<PortState> DeviceLookup::ReadPortState(const std::string& dev, uint32_t port) const {
  const std::string path = Path("class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/state");
  RDMAK8S_ASSIGN_OR_RETURN(std::string s, ReadSysfsAttr(path));
  StatusOr<internal::NumberedName> n = internal::ParseNumberedName(s, path);  // "4: ACTIVE"
  if (!n.ok() || n->number > 5) {
    return InternalError("port state \"" + s + "\" of " + dev + " not understood");
  }
  return static_cast<PortState>(n->number);
}

StatusOr<Port> DeviceLookup::ReadPort(const std::string& dev, uint32_t port_num) const {
  const std::string rel = "class/infiniband/" + dev + "/ports/" + std::to_string(port_num);
  Port port;
  port.port_num = port_num;
  RDMAK8S_ASSIGN_OR_RETURN(port.state, ReadPortState(dev, port_num));
  const std::string phys_path = Path(rel + "/phys_state");
  RDMAK8S_ASSIGN_OR_RETURN(std::string phys, ReadSysfsAttr(phys_path));
  RDMAK8S_ASSIGN_OR_RETURN(internal::NumberedName ph, internal::ParseNumberedName(phys, phys_path));
  port.phys_state = ph.number;  // "5: LinkUp"
  port.phys_state_name = ph.name;
  RDMAK8S_ASSIGN_OR_RETURN(port.link_layer, ReadSysfsAttr(Path(rel + "/link_layer")));
  return port;
}

StatusOr<LookedUpDevice> DeviceLookup::ReadDevice(const std::string& name) const {
  const std::string rel = "class/infiniband/" + name;
  LookedUpDevice d;
  d.name = name;
  const std::string node_type_path = Path(rel + "/node_type");
  RDMAK8S_ASSIGN_OR_RETURN(std::string node_type, ReadSysfsAttr(node_type_path));
  RDMAK8S_ASSIGN_OR_RETURN(internal::NumberedName nt,
                           internal::ParseNumberedName(node_type, node_type_path));
  d.parent_rel = ResolveInSysfsTree(root_, rel + "/device");
  if (d.parent_rel.empty()) {
    d.parent.kind = ParentKind::kVirtual;
  } else if (const std::string bus = Basename(d.parent_rel); IsPciAddress(bus)) {
    d.parent.kind = ParentKind::kPci;
    d.parent.pci.emplace();
    d.parent.pci->address = bus;
  } else if (IsPciAddress(Basename(Dirname(d.parent_rel)))) {
    d.parent.kind = ParentKind::kAuxiliary;  // an SF: mlx5_core.sf.<n> under its PCI function
    d.parent.aux_name = bus;
  } else {
    d.parent.kind = ParentKind::kUnknown;
  }
  if (auto p = ReadSysfsAttr(Path(rel + "/parent")); p.ok()) d.parent.lower_netdev = *p;
  RDMAK8S_ASSIGN_OR_RETURN(auto ports, ListSysfsDir(Path(rel + "/ports")));
  for (const auto& p : ports) {
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t num, internal::ParseUint(p, Path(rel + "/ports/" + p)));
    RDMAK8S_ASSIGN_OR_RETURN(Port port, ReadPort(name, static_cast<uint32_t>(num)));
    d.ports.push_back(std::move(port));
  }
  std::sort(d.ports.begin(), d.ports.end(),
            [](auto& a, auto& b) { return a.port_num < b.port_num; });
  d.node_type = nt.number <= 7 ? static_cast<NodeType>(nt.number) : NodeType::kUnknown;
  d.transport = TransportOf(d.node_type, d.ports.empty() ? "" : d.ports.front().link_layer);
  return d;
}

StatusOr<std::vector<uint16_t>> DeviceLookup::ReadPkeys(const std::string& dev, uint32_t port) const {
  const std::string base = Path("class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/pkeys");
  RDMAK8S_ASSIGN_OR_RETURN(auto names, ListSysfsDir(base));
  std::vector<std::pair<uint64_t, uint16_t>> keys;  // (index, pkey)
  for (const auto& n : names) {
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t index, internal::ParseUint(n, base + "/" + n));
    RDMAK8S_ASSIGN_OR_RETURN(std::string v, ReadSysfsAttr(base + "/" + n));
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t k, internal::ParseUint(v, base + "/" + n));
    if (k != 0) keys.emplace_back(index, static_cast<uint16_t>(k));
  }
  std::sort(keys.begin(), keys.end());
  std::vector<uint16_t> out;
  for (const auto& [index, k] : keys) out.push_back(k);
  return out;
}

StatusOr<std::string> DeviceLookup::ResolveByParent(const std::string& parent) const {
  if (!IsRdmaDeviceName(parent)) return NotFoundError("no RDMA device on bus device \"" + parent + "\"");
  // The bus device's directory, by its bus's devices/ links: PCI and auxiliary first (every
  // RDMA NIC with a netdev), then any other bus the kernel has (platform, vmbus).
  std::vector<std::string> buses = {"pci", "auxiliary"};
  if (StatusOr<std::vector<std::string>> all = ListSysfsDir(Path("bus")); all.ok()) {
    for (const auto& b : *all) {
      if (b != "pci" && b != "auxiliary") buses.push_back(b);
    }
  }
  for (const auto& bus : buses) {
    const std::string rel = "bus/" + bus + "/devices/" + parent;
    if (Exists(rel)) return OnlyDeviceOn(Path(rel), parent);
  }
  return NotFoundError("no RDMA device on bus device " + parent);
}

StatusOr<std::string> DeviceLookup::ResolveDeviceId(const std::string& id) const {
  if (!IsRdmaDeviceName(id)) return InvalidArgumentError("deviceID \"" + id + "\" is not a device name");
  if (Exists("class/infiniband/" + id)) return id;
  if (IsBusDeviceId(id)) {
    auto r = ResolveByParent(id);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
  }
  // A shared pool's device ID "<rdma_dev>-<k>" (rdmak8s-device-plugin), which Multus hands every
  // plugin of the chain as deviceID.
  if (auto dev = SharedDeviceIdDevice(id); dev && Exists("class/infiniband/" + *dev)) return *dev;
  return NotFoundError("deviceID " + id + ": no RDMA device, PCI function or auxiliary device " +
                       "of that name (nor a shared ID <rdma_dev>-<k>) has an RDMA device under " +
                       root_ + "/class/infiniband");
}

StatusOr<std::string> DeviceLookup::ResolveHiddenDeviceId(const std::string& id) const {
  const std::string verbs = Path("class/infiniband_verbs");
  RDMAK8S_ASSIGN_OR_RETURN(auto entries, ListSysfsDir(verbs));
  const auto shared_dev = SharedDeviceIdDevice(id);
  for (const auto& e : entries) {
    if (e.rfind("uverbs", 0) != 0) continue;
    auto ibdev = ReadSysfsAttr(verbs + "/" + e + "/ibdev");
    if (!ibdev.ok()) continue;  // unregistered meanwhile
    const bool named = *ibdev == id || (shared_dev && *ibdev == *shared_dev) ||
                       (IsBusDeviceId(id) && LinkBasename(verbs + "/" + e + "/device") == id);
    if (named && IsRdmaDeviceName(*ibdev) && !Exists("class/infiniband/" + *ibdev)) return *ibdev;
  }
  return NotFoundError("deviceID " + id + ": no uverbs device under " + verbs + " names it");
}

std::string DeviceLookup::NetdevBusDevice(const std::string& netdev) const {
  return LinkBasename(Path("class/net/" + netdev + "/device"));
}

uint32_t DeviceLookup::NetdevPort(const std::string& netdev) const {
  const std::string path = Path("class/net/" + netdev + "/dev_port");
  StatusOr<std::string> p = ReadSysfsAttr(path);
  if (!p.ok()) return 0;
  StatusOr<uint64_t> n = internal::ParseUint(*p, path);
  return n.ok() ? static_cast<uint32_t>(*n) + 1 : 0;
}

StatusOr<std::string> DeviceLookup::ResolveByNetdev(const std::string& netdev,
                                                    uint32_t* port_num) const {
  const std::string rel = "class/net/" + netdev;
  if (access(Path(rel).c_str(), F_OK) != 0) return ErrnoError(errno, "netdev " + netdev + " in " + root_);
  if (uint32_t port = NetdevPort(netdev); port != 0 && port_num != nullptr) *port_num = port;
  // A hardware RDMA device sits on the netdev's bus device. None there is no verdict: soft
  // RoCE/iWARP (rxe, siw) over a real or virtio NIC has no bus device of its own.
  if (std::string bus = NetdevBusDevice(netdev); !bus.empty()) {
    auto r = OnlyDeviceOn(Path(rel + "/device"), bus);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
  }
  // Soft devices: rxe names its netdev in `parent`; any device may list it as a GID's ndev.
  RDMAK8S_ASSIGN_OR_RETURN(auto devs, ListDevices());
  std::vector<std::string> named;
  for (const auto& d : devs) {
    auto p = ReadSysfsAttr(Path("class/infiniband/" + d + "/parent"));
    if (p.ok() && *p == netdev) named.push_back(d);
  }
  if (named.size() == 1) return named[0];
  if (named.size() > 1) return OneSoftDeviceOf(netdev, named);
  // Stacked netdevs (VLAN, bond slave chains): follow lower_* links.
  if (auto entries = ListSysfsDir(Path(rel)); entries.ok()) {
    for (const auto& e : *entries) {
      if (e.rfind("lower_", 0) == 0) {
        auto r = ResolveByNetdev(e.substr(6), port_num);
        if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
      }
    }
  }
  for (const auto& d : devs) {
    const std::string ports_dir = Path("class/infiniband/" + d + "/ports");
    auto ports = ListSysfsDir(ports_dir);
    if (!ports.ok()) continue;
    for (const auto& p : *ports) {
      const std::string ndevs_dir = ports_dir + "/" + p + "/gid_attrs/ndevs";
      auto ndevs = ListSysfsDir(ndevs_dir);
      if (!ndevs.ok()) continue;
      for (const auto& i : *ndevs) {
        auto nd = ReadSysfsAttr(ndevs_dir + "/" + i);
        if (nd.ok() && *nd == netdev) {
          StatusOr<uint64_t> n = internal::ParseUint(p, ports_dir + "/" + p);
          if (port_num != nullptr && n.ok()) *port_num = static_cast<uint32_t>(*n);
          return d;
        }
      }
    }
  }
  return NotFoundError("no RDMA device behind netdev " + netdev);
}

StatusOr<std::string> DeviceLookup::PfNetdev(const LookedUpDevice& dev) const {
  return PfNetdevAt(root_, dev.parent_rel, dev.parent.lower_netdev, dev.name);  // discovery's rule too
}

}  // namespace rdmak8s
