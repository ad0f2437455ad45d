#include "rdmak8s/discovery.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "rdmak8s/device_lookup.h"
#include "rdmak8s/file_util.h"
#include "rdmak8s/verbs.h"
#include "sysfs.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;
using internal::IsPciAddress;
using internal::NumberedName;
using internal::ParseInt;
using internal::ParseNumberedName;
using internal::ParseUint;
using internal::SysfsDir;

// siw's node_desc (SIW_NODE_DESC_COMMON, drivers/infiniband/sw/siw/siw.h); rxe writes "rxe" and
// exposes a `parent` attribute naming its netdev (rxe_verbs.c). Neither has a bus device or a
// `driver` link, so these are what sysfs tells us about the driver of a soft device.
constexpr std::string_view kSiwNodeDesc = "Software iWARP stack";
constexpr std::string_view kRxeNodeDesc = "rxe";

// Numeric entry names ("0".."15", "1","2") sorted by value; others dropped.
std::vector<uint32_t> NumericEntries(const std::vector<std::string>& names) {
  std::vector<uint32_t> out;
  out.reserve(names.size());
  for (const std::string& n : names) {
    if (n.empty() || n.size() > 9 ||
        !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    out.push_back(static_cast<uint32_t>(std::strtoul(n.c_str(), nullptr, 10)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The path `link` (read from a symlink inside `dir`) points at, lexically: sysfs links are
// relative and the fixture trees live under a root, so no realpath(3) is needed (or wanted: it
// would cost a lookup per component). lexically_normal leaves a trailing '/' when the link ends
// in ".." ("a/b/.." -> "a/"): it is cut, or the directory's name would read as empty and its
// parent as itself (a PF taken for an auxiliary device of its own address).
std::string ResolveLink(const std::string& dir, const std::string& link) {
  fs::path target = !link.empty() && link.front() == '/' ? fs::path(link) : fs::path(dir) / link;
  std::string out = target.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

bool IsZeroGid(std::string_view gid) {
  for (char c : gid) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

// Absent attribute, or EINVAL (the kernel's answer for gid_attrs of an empty GID and for
// gid_attrs/ndevs of a GID without a netdev): no value. Anything else is a read failure.
StatusOr<std::string> ReadGidAttr(const SysfsDir& port, const std::string& rel) {
  StatusOr<std::string> r = port.Read(rel);
  if (r.ok()) return r;
  StatusCode c = r.status().code();
  if (c == StatusCode::kNotFound || c == StatusCode::kInvalidArgument) return std::string();
  return r.status();
}

// Everything discovery reads once per call and shares between devices.
struct Context {
  std::string root;
  // class/infiniband_verbs + class/infiniband_mad, keyed by ibdev.
  std::unordered_map<std::string, std::vector<CharDevice>> chars;
  // The RDMA devices whose uverbs node hangs off each bus device directory. Char devices are not
  // network-namespace tagged: in exclusive mode a device moved into a pod still shows here, while
  // <bus device>/infiniband/ no longer lists it.
  std::unordered_map<std::string, std::set<std::string>> uverbs_ibdevs_by_parent;
  std::optional<CharDevice> rdma_cm;
  // class/net: the directory of the device a netdev sits on -> its netdevs.
  std::unordered_map<std::string, std::vector<std::string>> net_by_parent;
  std::vector<DeviceFailure> failures;  // char devices whose owner could not be read
  // Unreadable char devices by the directory they hang off (the owner's bus parent, or
  // devices/virtual): every RDMA device on that parent fails with it, since a device without
  // its uverbs node is not usable and we cannot tell which of them lost it.
  std::vector<std::pair<std::string, Status>> char_failures;
  // PF directory -> (VF address -> N of virtfnN), filled on first use: every VF of a PF would
  // otherwise list the PF and read all its virtfn links again.
  std::unordered_map<std::string, std::unordered_map<std::string, int>> vf_index_by_pf;
  // DiscoverOne: only char devices and netdevs that hang off this directory (the device's bus
  // parent, or devices/virtual for a soft device) are read; empty: all.
  std::string only_under;
  std::shared_ptr<std::mutex> vf_mu = std::make_shared<std::mutex>();  // guards vf_index_by_pf
};

// `prefix` ("uverbs0/" or ""): the char device's directory relative to `dir`.
StatusOr<std::pair<uint32_t, uint32_t>> ParseDevNumbers(const SysfsDir& dir,
                                                        const std::string& prefix = "") {
  const std::string rel = prefix + "dev";
  RDMAK8S_ASSIGN_OR_RETURN(std::string dev, dir.Read(rel));
  size_t colon = dev.find(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError(dir.PathOf(rel) + ": expected \"<major>:<minor>\", got \"" +
                                dev + "\"");
  }
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t major, ParseUint(dev.substr(0, colon), dir.PathOf(rel)));
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t minor, ParseUint(dev.substr(colon + 1), dir.PathOf(rel)));
  return std::make_pair(static_cast<uint32_t>(major), static_cast<uint32_t>(minor));
}

StatusOr<CharDevice> ReadCharDevice(const SysfsDir& klass, const std::string& name,
                                    CharDeviceKind kind, std::string* ibdev) {
  // Attributes are read relative to the class directory ("uverbs0/dev"): no descriptor of its
  // own per char device.
  const std::string prefix = name + "/";
  CharDevice c;
  c.kind = kind;
  c.name = name;
  StatusOr<std::pair<uint32_t, uint32_t>> dev = ParseDevNumbers(klass, prefix);
  if (!dev.ok()) {
    // "uverbs0/dev" missing may mean "uverbs0" itself is missing or a dangling link: name that.
    if (dev.status().code() == StatusCode::kNotFound) {
      if (StatusOr<SysfsDir> sub = klass.Sub(name); !sub.ok()) return sub.status();
    }
    return dev.status();
  }
  auto numbers = *dev;
  c.major = numbers.first;
  c.minor = numbers.second;
  RDMAK8S_ASSIGN_OR_RETURN(*ibdev, klass.Read(prefix + "ibdev"));
  if (kind == CharDeviceKind::kUmad || kind == CharDeviceKind::kIssm) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string port, klass.Read(prefix + "port"));
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t p, ParseUint(port, klass.PathOf(prefix + "port")));
    c.port_num = static_cast<uint32_t>(p);
  }
  return c;
}

// Scans one char-device class. A missing class (module not loaded) is empty; an unreadable one
// is an error of the whole call; an unreadable entry is a failure with its path.
// With ctx.only_under set (DiscoverOne), only the names the kernel placed under that parent
// (<parent>/infiniband_verbs/uverbsN) are considered, so one device's read does not cost a
// readlink per char device of the host.
Status IndexCharClass(Context& ctx, const std::string& klass_name) {
  StatusOr<SysfsDir> klass = SysfsDir::Open(ctx.root + "/class/" + klass_name);
  if (!klass.ok()) {
    if (klass.status().code() == StatusCode::kNotFound) return Status::Ok();
    return klass.status();
  }
  StatusOr<std::vector<std::string>> listed =
      ctx.only_under.empty() ? klass->List()
                             : internal::ListPath(ctx.only_under + "/" + klass_name);
  if (!listed.ok()) {
    if (!ctx.only_under.empty() && listed.status().code() == StatusCode::kNotFound) {
      return Status::Ok();  // no char device of this class on the parent
    }
    return listed.status();
  }
  std::vector<std::string> names = std::move(listed).value();
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    CharDeviceKind kind;
    if (name.rfind("uverbs", 0) == 0) {
      kind = CharDeviceKind::kUverbs;
    } else if (name.rfind("umad", 0) == 0) {
      kind = CharDeviceKind::kUmad;
    } else if (name.rfind("issm", 0) == 0) {
      kind = CharDeviceKind::kIssm;
    } else {
      continue;  // abi_version
    }
    // ib_uverbs/ib_umad parent their char devices on the RDMA device's own parent:
    // class/<x>/uverbsN -> ../../devices/<parent>/infiniband_verbs/uverbsN.
    std::string parent;
    if (StatusOr<std::string> link = klass->ReadLink(name); link.ok()) {
      parent = Dirname(Dirname(ResolveLink(klass->path(), *link)));
    }
    if (!ctx.only_under.empty() && !parent.empty() && parent != ctx.only_under) continue;
    std::string ibdev;
    StatusOr<CharDevice> c = ReadCharDevice(*klass, name, kind, &ibdev);
    if (!c.ok()) {
      Status s = c.status().Prepend("char device " + name);
      if (parent.empty()) {
        ctx.failures.push_back({"", s});
      } else {
        ctx.char_failures.emplace_back(parent, s);
      }
      continue;
    }
    if (kind == CharDeviceKind::kUverbs && !parent.empty()) ctx.uverbs_ibdevs_by_parent[parent].insert(ibdev);
    ctx.chars[ibdev].push_back(std::move(c).value());
  }
  return Status::Ok();
}

Status IndexNetdevs(Context& ctx) {
  StatusOr<SysfsDir> net = SysfsDir::Open(ctx.root + "/class/net");
  if (!net.ok()) {
    if (net.status().code() == StatusCode::kNotFound) return Status::Ok();
    return net.status();
  }
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names, net->List());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    // class/net/<n> -> ../../devices/<parent device>/net/<n>: the parent is two levels up.
    StatusOr<std::string> link = net->ReadLink(name);
    if (!link.ok()) continue;  // bonding_masters and other plain files
    std::string real = ResolveLink(net->path(), *link);
    std::string parent = Dirname(Dirname(real));
    if (Basename(Dirname(real)) != "net") continue;
    ctx.net_by_parent[parent].push_back(name);
  }
  return Status::Ok();
}

StatusOr<Context> BuildContext(const std::string& root, std::string only_under = "") {
  Context ctx;
  ctx.root = root;
  ctx.only_under = std::move(only_under);
  RDMAK8S_RETURN_IF_ERROR(IndexCharClass(ctx, "infiniband_verbs"));
  RDMAK8S_RETURN_IF_ERROR(IndexCharClass(ctx, "infiniband_mad"));
  StatusOr<SysfsDir> cm = SysfsDir::Open(root + "/class/misc/rdma_cm");
  if (cm.ok()) {
    StatusOr<std::pair<uint32_t, uint32_t>> numbers = ParseDevNumbers(*cm);
    if (numbers.ok()) {
      CharDevice c;
      c.kind = CharDeviceKind::kRdmaCm;
      c.name = "rdma_cm";
      c.major = numbers->first;
      c.minor = numbers->second;
      ctx.rdma_cm = c;
    } else {
      ctx.failures.push_back({"", numbers.status().Prepend("char device rdma_cm")});
    }
  } else if (cm.status().code() != StatusCode::kNotFound) {
    ctx.failures.push_back({"", cm.status().Prepend("char device rdma_cm")});
  }
  RDMAK8S_RETURN_IF_ERROR(IndexNetdevs(ctx));
  return ctx;
}

// `dir` is `pci_dir`, already open.
StatusOr<PciInfo> ReadPci(Context& ctx, const std::string& pci_dir, const SysfsDir& dir) {
  const std::string& root = ctx.root;
  PciInfo pci;
  pci.address = Basename(pci_dir);
  auto hex16 = [&](const char* attr, bool required, uint16_t* out) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, dir.ReadOptional(attr));
    if (!text) {
      return required ? NotFoundError("read " + dir.PathOf(attr) + ": No such file or directory")
                      : Status::Ok();
    }
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(*text, dir.PathOf(attr)));
    *out = static_cast<uint16_t>(v);
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(hex16("vendor", true, &pci.vendor_id));
  RDMAK8S_RETURN_IF_ERROR(hex16("device", true, &pci.device_id));
  RDMAK8S_RETURN_IF_ERROR(hex16("subsystem_vendor", false, &pci.subsystem_vendor_id));
  RDMAK8S_RETURN_IF_ERROR(hex16("subsystem_device", false, &pci.subsystem_device_id));
  RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> numa, dir.ReadOptional("numa_node"));
  if (numa) {
    RDMAK8S_ASSIGN_OR_RETURN(int64_t n, ParseInt(*numa, dir.PathOf("numa_node")));
    pci.numa_node = static_cast<int>(n);
  }
  // VF: physfn -> ../<pf>; the VF index is N of the PF's virtfnN that points back at us.
  StatusOr<std::string> physfn = dir.ReadLink("physfn");
  if (physfn.ok()) {
    pci.is_vf = true;
    std::string pf_dir = ResolveLink(pci_dir, *physfn);
    pci.pf_address = Basename(pf_dir);
    std::optional<std::unordered_map<std::string, int>> vfs;
    {
      std::lock_guard<std::mutex> lock(*ctx.vf_mu);
      if (auto it = ctx.vf_index_by_pf.find(pf_dir); it != ctx.vf_index_by_pf.end()) vfs = it->second;
    }
    if (!vfs) {
      // Read outside the lock; two threads may both read one PF, which is harmless.
      vfs.emplace();
      RDMAK8S_ASSIGN_OR_RETURN(SysfsDir pf, SysfsDir::Open(pf_dir));
      RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names, pf.List());
      for (const std::string& n : names) {
        if (n.rfind("virtfn", 0) != 0) continue;
        RDMAK8S_ASSIGN_OR_RETURN(std::string target, pf.ReadLink(n));
        RDMAK8S_ASSIGN_OR_RETURN(uint64_t vf, ParseUint(n.substr(6), pf.PathOf(n)));
        (*vfs)[Basename(target)] = static_cast<int>(vf);
      }
      std::lock_guard<std::mutex> lock(*ctx.vf_mu);
      ctx.vf_index_by_pf.emplace(pf_dir, *vfs);
    }
    if (auto it = vfs->find(pci.address); it != vfs->end()) pci.vf_index = it->second;
  } else if (physfn.status().code() != StatusCode::kNotFound) {
    return physfn.status();
  } else {
    // Only a PF has SR-IOV attributes.
    for (const char* attr : {"sriov_totalvfs", "sriov_numvfs"}) {
      RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, dir.ReadOptional(attr));
      if (!text) continue;
      RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(*text, dir.PathOf(attr)));
      (attr[6] == 't' ? pci.sriov_totalvfs : pci.sriov_numvfs) = static_cast<int>(v);
    }
  }
  // PCIe path: the BDF components of devices/pci<dom>:<bus>/<root port>/.../<this function>.
  std::string rel = fs::path(pci_dir).lexically_relative(fs::path(root) / "devices").string();
  size_t start = 0;
  while (start <= rel.size()) {
    size_t slash = rel.find('/', start);
    std::string_view part = std::string_view(rel).substr(
        start, slash == std::string::npos ? std::string::npos : slash - start);
    if (IsPciAddress(part)) pci.pcie_path.emplace_back(part);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return pci;
}

StatusOr<Port> ReadPort(const SysfsDir& dev, uint32_t port_num, bool rnic) {
  RDMAK8S_ASSIGN_OR_RETURN(SysfsDir dir, dev.Sub("ports/" + std::to_string(port_num)));
  Port port;
  port.port_num = port_num;
  RDMAK8S_ASSIGN_OR_RETURN(PortLinkState link, internal::ReadPortLinkStateIn(dir));
  port.state = link.state;
  port.phys_state = link.phys_state;
  port.phys_state_name = std::move(link.phys_state_name);
  RDMAK8S_ASSIGN_OR_RETURN(port.link_layer, dir.Read("link_layer"));
  // rate_show() fails with EINVAL when the port reports an invalid speed (e.g. link down on
  // some drivers): no rate then.
  StatusOr<std::string> rate = dir.Read("rate");
  if (rate.ok()) {
    port.rate = std::move(rate).value();
  } else if (rate.status().code() != StatusCode::kNotFound &&
             rate.status().code() != StatusCode::kInvalidArgument) {
    return rate.status();
  }
  const bool ib = port.link_layer == "InfiniBand";
  if (ib) {
    auto num = [&](const char* attr, std::optional<uint32_t>* out) -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, dir.ReadOptional(attr));
      if (!text) return Status::Ok();
      RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(*text, dir.PathOf(attr)));
      *out = static_cast<uint32_t>(v);
      return Status::Ok();
    };
    RDMAK8S_RETURN_IF_ERROR(num("lid", &port.lid));
    RDMAK8S_RETURN_IF_ERROR(num("sm_lid", &port.sm_lid));
    RDMAK8S_RETURN_IF_ERROR(num("lid_mask_count", &port.lmc));
    StatusOr<std::vector<std::string>> pkeys = dir.List("pkeys");
    if (pkeys.ok()) {
      for (uint32_t i : NumericEntries(*pkeys)) {
        std::string rel = "pkeys/" + std::to_string(i);
        RDMAK8S_ASSIGN_OR_RETURN(std::string text, dir.Read(rel));
        RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(text, dir.PathOf(rel)));
        if (v != 0) port.pkeys.push_back(static_cast<uint16_t>(v));
      }
    } else if (pkeys.status().code() != StatusCode::kNotFound) {
      return pkeys.status();
    }
  }
  StatusOr<std::vector<std::string>> gids = dir.List("gids");
  if (gids.ok()) {
    for (uint32_t i : NumericEntries(*gids)) {
      std::string idx = std::to_string(i);
      RDMAK8S_ASSIGN_OR_RETURN(std::string gid, dir.Read("gids/" + idx));
      if (IsZeroGid(gid)) continue;  // empty slot; its gid_attrs would fail with EINVAL
      GidEntry e;
      e.index = i;
      e.gid = std::move(gid);
      RDMAK8S_ASSIGN_OR_RETURN(std::string type, ReadGidAttr(dir, "gid_attrs/types/" + idx));
      // "IB/RoCE v1" means IB on an InfiniBand port and RoCE v1 on an Ethernet CA port; iWARP
      // (siw, irdma, cxgb4) and unknown link layers print it too, where it means neither.
      if (type == "IB/RoCE v1") {
        e.type = ib ? GidType::kIb
                    : (port.link_layer == "Ethernet" && !rnic ? GidType::kRoceV1 : GidType::kUnknown);
      } else if (type == "RoCE v2") {
        e.type = GidType::kRoceV2;
      } else if (type.empty() && ib) {
        e.type = GidType::kIb;
      }
      RDMAK8S_ASSIGN_OR_RETURN(e.netdev, ReadGidAttr(dir, "gid_attrs/ndevs/" + idx));
      port.gids.push_back(std::move(e));
    }
  } else if (gids.status().code() != StatusCode::kNotFound) {
    return gids.status();
  }
  return port;
}

void AddUnique(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// Upper devices the kernel links from a netdev (class/net/<n>/upper_<m>: vlan, macvlan, bond...).
void AddUppers(const std::string& root, std::vector<std::string>& netdevs) {
  for (size_t i = 0; i < netdevs.size() && i < 64; ++i) {
    // Missing: the netdev lives in another namespace, nothing to follow.
    StatusOr<std::vector<std::string>> names =
        internal::ListPath(root + "/class/net/" + netdevs[i]);
    if (!names.ok()) continue;
    std::sort(names->begin(), names->end());
    for (const std::string& n : *names) {
      if (n.rfind("upper_", 0) == 0) AddUnique(netdevs, n.substr(6));
    }
  }
}

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

StatusOr<RdmaDevice> ReadDevice(Context& ctx, const std::string& name) {
  const std::string class_dir = ctx.root + "/class/infiniband";
  RDMAK8S_ASSIGN_OR_RETURN(SysfsDir dir, SysfsDir::Open(class_dir + "/" + name));
  RdmaDevice d;
  d.name = name;
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
  std::string node_desc, parent_attr;
  RDMAK8S_RETURN_IF_ERROR(optional("node_desc", &node_desc));
  RDMAK8S_RETURN_IF_ERROR(optional("parent", &parent_attr));

  // Where the device really is: class/infiniband/<dev> -> ../../devices/.../infiniband/<dev>.
  std::string real_dir;
  if (StatusOr<std::string> l = internal::ReadLinkPath(class_dir + "/" + name); l.ok()) {
    real_dir = ResolveLink(class_dir, *l);
  } else {
    std::error_code ec;
    real_dir = fs::canonical(dir.path(), ec).string();
    if (ec) return ErrnoError(ec.value(), "resolve " + dir.path());
  }
  // The bus device: `device` -> ../../../0000:3b:00.0 (PCI) or ../../../mlx5_core.sf.2 (aux).
  std::string parent_dir;
  StatusOr<std::string> dev_link = dir.ReadLink("device");
  if (dev_link.ok()) {
    parent_dir = ResolveLink(real_dir, *dev_link);
  } else if (dev_link.status().code() != StatusCode::kNotFound) {
    return dev_link.status();
  }

  const bool soft_rxe = !parent_attr.empty() || node_desc == kRxeNodeDesc ||
                        (parent_dir.empty() && name.rfind("rxe", 0) == 0);
  const bool soft_siw = node_desc == kSiwNodeDesc ||
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
    // A soft device is virtual even when it sits on a PCI NIC's netdev (siw then has a `device`
    // link to that NIC: keep the PCI info for locality).
    d.parent.kind = ParentKind::kVirtual;
    d.driver = soft_rxe ? "rxe" : "siw";
    d.rdma_driver = d.driver;
  }

  // Other RDMA drivers on the same bus device (device_id.h ExclusiveDeviceId).
  if (!parent_dir.empty() && d.parent.kind != ParentKind::kVirtual) {
    RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> on_bus, RdmaDevicesOnBusDir(parent_dir));
    // Also those this view hides (moved into a pod): an ID must not change while a peer is away.
    std::set<std::string> peers(on_bus.begin(), on_bus.end());
    if (auto it = ctx.uverbs_ibdevs_by_parent.find(parent_dir); it != ctx.uverbs_ibdevs_by_parent.end()) {
      peers.insert(it->second.begin(), it->second.end());
    }
    peers.erase(name);
    d.bus_peers.assign(peers.begin(), peers.end());
  }

  // A char device on this device's parent could not be read: it may be ours.
  const std::string char_parent = parent_dir.empty() ? ctx.root + "/devices/virtual" : parent_dir;
  for (const auto& [dir_of, status] : ctx.char_failures) {
    if (dir_of == char_parent) return status;
  }

  // Ports.
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> port_names, dir.List("ports"));
  std::vector<uint32_t> port_nums = NumericEntries(port_names);
  std::vector<std::string> hw_netdevs;
  if (!parent_dir.empty() && d.parent.kind != ParentKind::kVirtual) {
    auto it = ctx.net_by_parent.find(parent_dir);
    if (it != ctx.net_by_parent.end()) hw_netdevs = it->second;
  }
  // dev_port (0-based) picks the port when one bus device carries several (mlx4, cxgb4).
  std::map<std::string, uint32_t> dev_port;
  if (port_nums.size() > 1) {
    for (const std::string& n : hw_netdevs) {
      StatusOr<SysfsDir> nd = SysfsDir::Open(ctx.root + "/class/net/" + n);
      if (!nd.ok()) continue;
      StatusOr<std::optional<std::string>> text = nd->ReadOptional("dev_port");
      if (!text.ok()) return text.status();
      if (!*text) continue;
      RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(**text, nd->PathOf("dev_port")));
      dev_port[n] = static_cast<uint32_t>(v);
    }
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
  if (d.parent.kind == ParentKind::kVirtual) {
    d.parent.lower_netdev = parent_attr;
    for (const Port& p : d.ports) {
      for (const GidEntry& g : p.gids) {
        if (d.parent.lower_netdev.empty()) d.parent.lower_netdev = g.netdev;
      }
    }
  }

  // Classification (issue 2): the one transport rule (device.h).
  d.transport = TransportOf(d.node_type, d.ports.empty() ? "" : d.ports.front().link_layer);
  if (d.transport == Transport::kRoce) {
    for (const Port& p : d.ports) {
      for (const GidEntry& g : p.gids) {
        d.roce_v1 = d.roce_v1 || g.type == GidType::kRoceV1;
        d.roce_v2 = d.roce_v2 || g.type == GidType::kRoceV2;
      }
    }
  }

  // Char devices: uverbs, umad/issm by port, then rdma_cm.
  if (auto it = ctx.chars.find(name); it != ctx.chars.end()) d.char_devices = it->second;
  std::stable_sort(d.char_devices.begin(), d.char_devices.end(),
                   [](const CharDevice& a, const CharDevice& b) {
                     if (a.port_num != b.port_num) return a.port_num < b.port_num;
                     return static_cast<int>(a.kind) < static_cast<int>(b.kind);
                   });
  if (ctx.rdma_cm) d.char_devices.push_back(*ctx.rdma_cm);
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

// Reads every device, on a few threads when there are many: discovery's cost is syscalls
// (about 190 per device: attributes, GIDs, links), which run in parallel in the kernel.
std::vector<std::optional<StatusOr<RdmaDevice>>> ReadDevices(Context& ctx,
                                                            const std::vector<std::string>& names) {
  constexpr size_t kDevicesPerThread = 32;
  constexpr unsigned kMaxThreads = 8;
  std::vector<std::optional<StatusOr<RdmaDevice>>> out(names.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < names.size();) out[i].emplace(ReadDevice(ctx, names[i]));
  };
  unsigned threads = std::min<unsigned>(
      {std::max(1u, std::thread::hardware_concurrency()), kMaxThreads,
       static_cast<unsigned>(names.size() / kDevicesPerThread + 1)});
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads: the calling thread does the rest
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  return out;
}

// "/sys/" and "./sys" name the same tree as "/sys": normalise once so links resolved lexically
// compare equal.
std::string NormalRoot(const std::string& root) {
  std::string r = fs::path(root.empty() ? "." : root).lexically_normal().string();
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r;
}

}  // namespace

SysfsDiscovery::SysfsDiscovery(DiscoveryOptions options) : options_(std::move(options)) {}

StatusOr<DiscoveryResult> SysfsDiscovery::DiscoverAll() {
  DiscoveryResult result;
  const std::string root = NormalRoot(options_.sysfs_root);
  StatusOr<SysfsDir> klass = SysfsDir::Open(root + "/class/infiniband");
  if (!klass.ok()) {
    if (klass.status().code() == StatusCode::kNotFound) return result;  // no RDMA core loaded
    return klass.status().Prepend("discover RDMA devices");
  }
  result.rdma_present = true;
  StatusOr<std::vector<std::string>> names = klass->List();
  if (!names.ok()) return names.status().Prepend("discover RDMA devices");
  std::sort(names->begin(), names->end());
  StatusOr<Context> ctx = BuildContext(root);
  if (!ctx.ok()) return ctx.status().Prepend("discover RDMA devices");
  result.failures = std::move(ctx->failures);
  std::vector<std::optional<StatusOr<RdmaDevice>>> read = ReadDevices(*ctx, *names);
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    StatusOr<RdmaDevice>& d = *read[i];
    if (!d.ok()) {
      // Gone between the listing and the read (hot-unplug): not a failure, just not there.
      if (d.status().code() == StatusCode::kNotFound &&
          !SysfsDir::Open(root + "/class/infiniband/" + name).ok()) {
        continue;
      }
      result.failures.push_back({name, d.status().Prepend("discover " + name)});
      continue;
    }
    Enrich(options_.verbs, *d);
    result.devices.push_back(std::move(d).value());
  }
  return result;
}

StatusOr<RdmaDevice> SysfsDiscovery::DiscoverOne(std::string_view rdma_dev) {
  std::string name(rdma_dev);
  if (!IsRdmaDeviceName(name)) return InvalidArgumentError("bad RDMA device name \"" + name + "\"");
  const std::string root = NormalRoot(options_.sysfs_root);
  StatusOr<SysfsDir> dev = SysfsDir::Open(root + "/class/infiniband/" + name);
  if (!dev.ok()) return dev.status().Prepend("discover " + name);
  // Read only what hangs off this device's parent (a rescan of one device on a host with
  // hundreds should not read them all).
  std::string only_under;
  const std::string class_dir = root + "/class/infiniband";
  if (StatusOr<std::string> l = internal::ReadLinkPath(class_dir + "/" + name); l.ok()) {
    std::string real_dir = ResolveLink(class_dir, *l);
    StatusOr<std::string> dev_link = dev->ReadLink("device");
    only_under = dev_link.ok() ? ResolveLink(real_dir, *dev_link) : root + "/devices/virtual";
  }
  RDMAK8S_ASSIGN_OR_RETURN(Context ctx, BuildContext(root, only_under));
  StatusOr<RdmaDevice> d = ReadDevice(ctx, name);
  if (!d.ok()) return d.status().Prepend("discover " + name);
  Enrich(options_.verbs, *d);
  return d;
}

const RdmaDevice* FindByName(const std::vector<RdmaDevice>& devs, std::string_view rdma_dev) {
  for (const RdmaDevice& d : devs) {
    if (d.name == rdma_dev) return &d;
  }
  return nullptr;
}

const RdmaDevice* FindByPciAddress(const std::vector<RdmaDevice>& devs,
                                   std::string_view pci_addr) {
  // The device on the function itself, not an SF that merely belongs to it.
  for (const RdmaDevice& d : devs) {
    if (d.parent.kind == ParentKind::kPci && d.pci_address() == pci_addr) return &d;
  }
  return nullptr;
}

const RdmaDevice* FindByAuxName(const std::vector<RdmaDevice>& devs, std::string_view aux_name) {
  for (const RdmaDevice& d : devs) {
    if (d.parent.kind == ParentKind::kAuxiliary && d.parent.aux_name == aux_name) return &d;
  }
  return nullptr;
}

std::vector<const RdmaDevice*> FindByNetdev(const std::vector<RdmaDevice>& devs,
                                            std::string_view netdev) {
  std::vector<const RdmaDevice*> out;
  for (const RdmaDevice& d : devs) {
    if (std::find(d.netdevs.begin(), d.netdevs.end(), netdev) != d.netdevs.end()) {
      out.push_back(&d);
    }
  }
  return out;
}

}  // namespace rdmak8s
