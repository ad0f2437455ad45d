// Discovery's device assembly: one RdmaDevice read step by step (attributes, bus device, parent
// kind and PCI function, bus peers, ports and their netdevs, transport, char devices).
#include "discovery/discovery_device.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "discovery/discovery_netdevs.h"
#include "discovery/discovery_pci.h"
#include "discovery/discovery_ports.h"
#include "rdmak8s/base/file_util.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/pf_netdev.h"
#include "device/sysfs.h"

namespace rdmak8s::internal::discovery {
namespace {

using internal::IsPciAddress;
using internal::NumberedName;
using internal::ParseNumberedName;
using internal::ParseUint;

// siw's node_desc (SIW_NODE_DESC_COMMON, drivers/infiniband/sw/siw/siw.h); rxe writes "rxe" and
// exposes a `parent` attribute naming its netdev (rxe_verbs.c). Neither has a bus device or a
// `driver` link, so these are what sysfs tells us about the driver of a soft device.
constexpr std::string_view kSiwNodeDesc = "Software iWARP stack";
constexpr std::string_view kRxeNodeDesc = "rxe";

// The RDMA driver behind a bus device: NIC drivers on the auxiliary bus create one auxiliary
// device for their RDMA driver under the function (mlx5_core.rdma.0, ice.roce.0 / ice.iwarp.0,
// bnxt_en.rdma.0; drivers/base/auxiliary.c names them <modname>.<devname>.<id>). Its `driver`
// link names the auxiliary driver, "<module>" or "<module>.<name>" (irdma, mlx5_ib.rdma,
// bnxt_re.rdma): the module part is the RDMA driver. Empty when there is none.
std::string AuxRdmaDriver(const std::string& parent_dir) {
  StatusOr<std::vector<std::string>> names = internal::ListPath(parent_dir);
  if (!names.ok()) return "";
  std::sort(names->begin(), names->end());
  for (const std::string& n : *names) {
    size_t first = n.find('.');
    size_t last = n.rfind('.');
    if (first == std::string::npos || first == last) continue;
    std::string kind = n.substr(first + 1, last - first - 1);
    if (kind != "rdma" && kind != "roce" && kind != "iwarp") continue;
    StatusOr<std::string> drv = internal::ReadLinkPath(parent_dir + "/" + n + "/driver");
    if (!drv.ok()) continue;  // not bound: no RDMA driver loaded for it
    std::string module = Basename(*drv);
    return module.substr(0, module.find('.'));
  }
  return "";
}

// The text attributes of class/infiniband/<dev>: node type and GUIDs into `d`, and the two that
// only tell a soft device apart (node_desc; rxe's `parent`, its netdev).
struct SoftHints {
  std::string node_desc;
  std::string parent_attr;
};
StatusOr<SoftHints> ReadDeviceAttributes(const SysfsDir& dir, RdmaDevice& d) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string node_type, dir.Read("node_type"));
  RDMAK8S_ASSIGN_OR_RETURN(NumberedName nt, ParseNumberedName(node_type, dir.PathOf("node_type")));
  d.node_type = nt.number <= 7 ? static_cast<NodeType>(nt.number) : NodeType::kUnknown;
  RDMAK8S_ASSIGN_OR_RETURN(d.node_guid, dir.Read("node_guid"));
  auto optional = [&](const char* attr, std::string* out) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, dir.ReadOptional(attr));
    if (text) *out = std::move(*text);
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(optional("sys_image_guid", &d.sys_image_guid));
  RDMAK8S_RETURN_IF_ERROR(optional("fw_ver", &d.fw_ver));
  RDMAK8S_RETURN_IF_ERROR(optional("hca_type", &d.hca_type));
  RDMAK8S_RETURN_IF_ERROR(optional("board_id", &d.board_id));
  SoftHints hints;
  RDMAK8S_RETURN_IF_ERROR(optional("node_desc", &hints.node_desc));
  RDMAK8S_RETURN_IF_ERROR(optional("parent", &hints.parent_attr));
  return hints;
}

// The bus device's directory (`device` -> ../../../0000:3b:00.0 for PCI, ../../../mlx5_core.sf.2
// for auxiliary), resolved from where the device really is (class/infiniband/<dev> ->
// ../../devices/.../infiniband/<dev>); empty when it has none (a soft device). Lexically, in the
// tree's own spelling, like every index of the call (ResolveLink): a class entry that is a
// directory is where it is named; realpath(3) would leave the root when it is reached through a
// link (a pod's /proc/self/fd/N, a linked fixture) and no index would match.
StatusOr<std::string> BusDeviceDir(const std::string& class_dir, const std::string& name,
                                   const SysfsDir& dir) {
  std::string real_dir;
  if (StatusOr<std::string> l = internal::ReadLinkPath(class_dir + "/" + name); l.ok()) {
    real_dir = ResolveLink(class_dir, *l);
  } else if (l.status().code() == StatusCode::kInvalidArgument) {
    real_dir = ResolveLink(class_dir, name);  // not a link: a directory of its own
  } else {
    return l.status().Prepend("resolve " + dir.path());
  }
  std::string parent_dir;
  StatusOr<std::string> dev_link = dir.ReadLink("device");
  if (dev_link.ok()) {
    parent_dir = ResolveLink(real_dir, *dev_link);
  } else if (dev_link.status().code() != StatusCode::kNotFound) {
    return dev_link.status();
  }
  return parent_dir;
}

// d.parent (kind, PCI function or auxiliary name), d.driver and d.rdma_driver from the bus device
// at `parent_dir` ("" for none: virtual). A soft device (rxe, siw) is virtual even when it sits
// on a PCI NIC's netdev (siw then has a `device` link to that NIC: the PCI info is kept for
// locality).
Status ReadParent(Context& ctx, const std::string& parent_dir, const SoftHints& hints,
                  RdmaDevice& d) {
  const std::string& name = d.name;
  const bool soft_rxe = !hints.parent_attr.empty() || hints.node_desc == kRxeNodeDesc ||
                        (parent_dir.empty() && name.rfind("rxe", 0) == 0);
  const bool soft_siw = hints.node_desc == kSiwNodeDesc ||
                        (parent_dir.empty() && name.rfind("siw", 0) == 0);

  if (!parent_dir.empty()) {
    RDMAK8S_ASSIGN_OR_RETURN(SysfsDir pdir, SysfsDir::Open(parent_dir));
    std::string subsystem;
    if (StatusOr<std::string> s = pdir.ReadLink("subsystem"); s.ok()) subsystem = Basename(*s);
    if (StatusOr<std::string> drv = pdir.ReadLink("driver"); drv.ok()) d.driver = Basename(*drv);
    d.rdma_driver = AuxRdmaDriver(parent_dir);
    const std::string base = Basename(parent_dir);
    if (subsystem == "pci" || (subsystem.empty() && IsPciAddress(base))) {
      d.parent.kind = ParentKind::kPci;
      RDMAK8S_ASSIGN_OR_RETURN(PciInfo pci, ReadPci(ctx, parent_dir, pdir));
      d.parent.pci = std::move(pci);
    } else if (subsystem == "auxiliary" ||
               (subsystem.empty() && IsPciAddress(Basename(Dirname(parent_dir))))) {
      d.parent.kind = ParentKind::kAuxiliary;
      d.parent.aux_name = base;
      // The PCI function that owns it: the nearest PCI ancestor directory.
      std::string up = Dirname(parent_dir);
      while (!up.empty() && !IsPciAddress(Basename(up))) up = Dirname(up);
      if (!up.empty()) {
        RDMAK8S_ASSIGN_OR_RETURN(SysfsDir updir, SysfsDir::Open(up));
        RDMAK8S_ASSIGN_OR_RETURN(PciInfo pci, ReadPci(ctx, up, updir));
        d.parent.pci = std::move(pci);
      }
    } else {
      d.parent.kind = ParentKind::kUnknown;
    }
  } else {
    d.parent.kind = ParentKind::kVirtual;
  }
  if (soft_rxe || soft_siw) {
    d.parent.kind = ParentKind::kVirtual;
    d.driver = soft_rxe ? "rxe" : "siw";
    d.rdma_driver = d.driver;
  }
  return Status::Ok();
}

// d.bus_peers: the other RDMA devices on the same bus device (device_id.h ExclusiveDeviceId),
// also those this view hides (moved into a pod): an ID must not change while a peer is away.
Status FindBusPeers(const Context& ctx, const std::string& parent_dir, RdmaDevice& d) {
  if (parent_dir.empty() || d.parent.kind == ParentKind::kVirtual) return Status::Ok();
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> on_bus, RdmaDevicesOnBusDir(parent_dir));
  std::set<std::string> peers(on_bus.begin(), on_bus.end());
  if (auto it = ctx.uverbs_ibdevs_by_parent.find(parent_dir); it != ctx.uverbs_ibdevs_by_parent.end()) {
    peers.insert(it->second.begin(), it->second.end());
  }
  peers.erase(d.name);
  d.bus_peers.assign(peers.begin(), peers.end());
  return Status::Ok();
}

// A char device on this device's parent could not be read (Context::char_failures): it may be
// ours, so the device fails with it.
Status CharFailureOf(const Context& ctx, const std::string& parent_dir) {
  const std::string char_parent = parent_dir.empty() ? ctx.root + "/devices/virtual" : parent_dir;
  for (const auto& [dir_of, status] : ctx.char_failures) {
    if (dir_of == char_parent) return status;
  }
  return Status::Ok();
}

// class/net/<n>/dev_port (0-based) of each netdev: it picks the port when one bus device carries
// several (mlx4, cxgb4). Netdevs without it, or gone, are left out.
StatusOr<std::map<std::string, uint32_t>> DevPorts(const Context& ctx,
                                                   const std::vector<std::string>& netdevs) {
  std::map<std::string, uint32_t> dev_port;
  for (const std::string& n : netdevs) {
    StatusOr<SysfsDir> nd = SysfsDir::Open(ctx.root + "/class/net/" + n);
    if (!nd.ok()) continue;
    StatusOr<std::optional<std::string>> text = nd->ReadOptional("dev_port");
    if (!text.ok()) return text.status();
    if (!*text) continue;
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(**text, nd->PathOf("dev_port")));
    dev_port[n] = static_cast<uint32_t>(v);
  }
  return dev_port;
}

// d.ports (discovery_ports.h) with each port's netdevs: rxe's `parent`, the bus device's netdevs
// (by dev_port when it has several ports), the GIDs' netdevs, and their uppers; then d.netdevs,
// all of them once.
Status ReadPorts(const Context& ctx, const SysfsDir& dir, const std::string& parent_dir,
                 const std::string& parent_attr, RdmaDevice& d) {
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> port_names, dir.List("ports"));
  std::vector<uint32_t> port_nums = NumericEntries(port_names);
  std::vector<std::string> hw_netdevs;
  if (!parent_dir.empty() && d.parent.kind != ParentKind::kVirtual) {
    auto it = ctx.net_by_parent.find(parent_dir);
    if (it != ctx.net_by_parent.end()) hw_netdevs = it->second;
  }
  std::map<std::string, uint32_t> dev_port;
  if (port_nums.size() > 1) {
    RDMAK8S_ASSIGN_OR_RETURN(dev_port, DevPorts(ctx, hw_netdevs));
  }
  for (uint32_t pn : port_nums) {
    StatusOr<Port> port = ReadPort(dir, pn, d.node_type == NodeType::kRnic);
    if (!port.ok()) return port.status().Prepend("port " + std::to_string(pn));
    Port p = std::move(port).value();
    std::vector<std::string> netdevs;
    if (d.parent.kind == ParentKind::kVirtual && !parent_attr.empty()) {
      AddUnique(netdevs, parent_attr);
    }
    for (const std::string& n : hw_netdevs) {
      if (port_nums.size() <= 1 || dev_port.count(n) == 0 || dev_port[n] + 1 == pn) {
        AddUnique(netdevs, n);
      }
    }
    for (const GidEntry& g : p.gids) AddUnique(netdevs, g.netdev);
    AddUppers(ctx.root, netdevs);
    p.netdevs = std::move(netdevs);
    d.ports.push_back(std::move(p));
  }
  for (const Port& p : d.ports) {
    for (const std::string& n : p.netdevs) AddUnique(d.netdevs, n);
  }
  return Status::Ok();
}

// A virtual device's lower netdev: rxe's `parent`, else the first GID's netdev.
void FindLowerNetdev(const std::string& parent_attr, RdmaDevice& d) {
  if (d.parent.kind != ParentKind::kVirtual) return;
  d.parent.lower_netdev = parent_attr;
  for (const Port& p : d.ports) {
    for (const GidEntry& g : p.gids) {
      if (d.parent.lower_netdev.empty()) d.parent.lower_netdev = g.netdev;
    }
  }
}

// d.pf_netdev by the one PF netdev rule (pf_netdev.h, DeviceLookup::PfNetdev's): "" when there
// is none. A soft device's lower netdev is the model's (FindLowerNetdev).
Status FindPfNetdev(const Context& ctx, const std::string& parent_dir, RdmaDevice& d) {
  std::string bus_rel;
  if (!parent_dir.empty()) {
    bus_rel = std::filesystem::path(parent_dir).lexically_relative(ctx.root).string();
    if (bus_rel.empty() || bus_rel.rfind("..", 0) == 0) return Status::Ok();  // not in the tree
  }
  StatusOr<std::string> pf = PfNetdevAt(ctx.root, bus_rel, d.parent.lower_netdev, d.name);
  if (pf.ok()) {
    d.pf_netdev = std::move(pf).value();
  } else if (pf.status().code() != StatusCode::kNotFound) {
    return pf.status();
  }
  return Status::Ok();
}

// Classification (issue 2): the one transport rule (device.h), and the RoCE versions its GIDs
// offer.
void Classify(RdmaDevice& d) {
  d.transport = TransportOf(d.node_type, d.ports.empty() ? "" : d.ports.front().link_layer);
  if (d.transport == Transport::kRoce) {
    for (const Port& p : d.ports) {
      for (const GidEntry& g : p.gids) {
        d.roce_v1 = d.roce_v1 || g.type == GidType::kRoceV1;
        d.roce_v2 = d.roce_v2 || g.type == GidType::kRoceV2;
      }
    }
  }
}

// Char devices: uverbs, umad/issm by port, then rdma_cm.
void AttachCharDevices(const Context& ctx, RdmaDevice& d) {
  if (auto it = ctx.chars.find(d.name); it != ctx.chars.end()) d.char_devices = it->second;
  std::stable_sort(d.char_devices.begin(), d.char_devices.end(),
                   [](const CharDevice& a, const CharDevice& b) {
                     if (a.port_num != b.port_num) return a.port_num < b.port_num;
                     return static_cast<int>(a.kind) < static_cast<int>(b.kind);
                   });
  if (ctx.rdma_cm) d.char_devices.push_back(*ctx.rdma_cm);
}

}  // namespace

StatusOr<RdmaDevice> ReadDevice(Context& ctx, const std::string& name) {
  const std::string class_dir = ctx.root + "/class/infiniband";
  RDMAK8S_ASSIGN_OR_RETURN(SysfsDir dir, SysfsDir::Open(class_dir + "/" + name));
  RdmaDevice d;
  d.name = name;
  RDMAK8S_ASSIGN_OR_RETURN(SoftHints hints, ReadDeviceAttributes(dir, d));
  RDMAK8S_ASSIGN_OR_RETURN(std::string parent_dir, BusDeviceDir(class_dir, name, dir));
  RDMAK8S_RETURN_IF_ERROR(ReadParent(ctx, parent_dir, hints, d));
  RDMAK8S_RETURN_IF_ERROR(FindBusPeers(ctx, parent_dir, d));
  RDMAK8S_RETURN_IF_ERROR(CharFailureOf(ctx, parent_dir));
  RDMAK8S_RETURN_IF_ERROR(ReadPorts(ctx, dir, parent_dir, hints.parent_attr, d));
  FindLowerNetdev(hints.parent_attr, d);
  RDMAK8S_RETURN_IF_ERROR(FindPfNetdev(ctx, parent_dir, d));
  Classify(d);
  AttachCharDevices(ctx, d);
  return d;
}

void Enrich(VerbsQuery* verbs, RdmaDevice& d) {
  if (verbs == nullptr) return;
  StatusOr<VerbsAttrs> attrs = verbs->QueryDevice(d.name);
  // sysfs is the source of truth: a device libibverbs cannot see (no provider, no uverbs node)
  // or cannot query is still reported, without verbs attributes.
  if (!attrs.ok()) return;
  if (d.fw_ver.empty()) d.fw_ver = attrs->fw_ver;
  d.verbs = std::move(attrs).value();
}

}  // namespace rdmak8s::internal::discovery
