#include "support/sysfs_builder.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace rdmak8s::testing {
namespace fs = std::filesystem;

namespace {

std::string Hex4(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

std::string Hex6(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%06x", v);
  return buf;
}

}  // namespace

Status WriteWhole(const std::string& tmp_dir, const std::string& path, const std::string& text) {
  const fs::path p(path);
  static std::atomic<unsigned> serial{0};
  const fs::path tmp = fs::path(tmp_dir) / (".write." + std::to_string(getpid()) + "." +
                                  std::to_string(serial.fetch_add(1)));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return InternalError("write " + tmp.string() + " (for " + p.string() + "): failed");
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return ErrnoError(ec.value(), "rename over " + p.string());
  }
  return Status::Ok();
}

SysfsBuilder::SysfsBuilder(std::string root) : root_(std::move(root)) {
  // Directories appear as entries are added (git keeps no empty directory, and the committed
  // fixtures must equal this output); class/net exists on every kernel.
  Record(MakeDirs("class/net")).IgnoreError();  // recorded in status_
}

Status SysfsBuilder::Record(Status s) {
  if (!s.ok() && status_.ok()) status_ = s;
  return s;
}

Status SysfsBuilder::MakeDirs(const std::string& rel) {
  std::error_code ec;
  fs::create_directories(fs::path(root_) / rel, ec);
  if (ec) return ErrnoError(ec.value(), "mkdir " + (fs::path(root_) / rel).string());
  return Status::Ok();
}

Status SysfsBuilder::WriteAttr(const std::string& rel, const std::string& text) {
  fs::path p = fs::path(root_) / rel;
  RDMAK8S_RETURN_IF_ERROR(Record(MakeDirs(fs::path(rel).parent_path().string())));
  return Record(WriteWhole(root_, p.string(), text + "\n"));
}

Status SysfsBuilder::Link(const std::string& link_rel, const std::string& target_rel) {
  fs::path link = fs::path(link_rel);
  RDMAK8S_RETURN_IF_ERROR(Record(MakeDirs(link.parent_path().string())));
  fs::path target = fs::path(target_rel).lexically_relative(link.parent_path());
  // Like kernfs_get_target_path(): when the target is an ancestor of the link, climb one level
  // above it and name it ("../../../0000:3b:00.0", not "../..").
  bool only_up = true;
  for (const auto& part : target) only_up = only_up && (part == ".." || part == ".");
  if (only_up) target = (target / ".." / fs::path(target_rel).filename()).lexically_normal();
  std::error_code ec;
  fs::path abs = fs::path(root_) / link;
  fs::remove(abs, ec);
  fs::create_symlink(target, abs, ec);
  if (ec) return Record(ErrnoError(ec.value(), "symlink " + abs.string()));
  return Status::Ok();
}

std::string SysfsBuilder::DevicePath(const std::string& name) const {
  auto it = device_paths_.find(name);
  return it == device_paths_.end() ? std::string() : it->second;
}

Status SysfsBuilder::AddPciFunction(const PciFunctionSpec& spec) {
  if (spec.address.size() != 12 || (!spec.root_port.empty() && spec.root_port.size() != 12)) {
    return Record(InvalidArgumentError("bad PCI address " + spec.address + " / " + spec.root_port));
  }
  const std::string& top = spec.root_port.empty() ? spec.address : spec.root_port;
  std::string dir = "devices/pci" + top.substr(0, 7);
  if (!spec.root_port.empty()) dir += "/" + spec.root_port;
  if (!spec.root_port.empty() && !fs::exists(fs::path(root_) / dir)) {
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/vendor", "0x8086"));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/device", "0x2030"));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/class", "0x060400"));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/numa_node", std::to_string(spec.numa_node)));
    RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "bus/pci"));
    RDMAK8S_RETURN_IF_ERROR(Link("bus/pci/devices/" + spec.root_port, dir));
  }
  for (const std::string& b : spec.bridges) {
    dir += "/" + b;
    if (!fs::exists(fs::path(root_) / dir)) {
      RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/class", "0x060400"));
      RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/numa_node", std::to_string(spec.numa_node)));
      RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "bus/pci"));
      RDMAK8S_RETURN_IF_ERROR(Link("bus/pci/devices/" + b, dir));
    }
  }
  dir += "/" + spec.address;
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/vendor", Hex4(spec.vendor)));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/device", Hex4(spec.device)));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/subsystem_vendor", Hex4(spec.subsystem_vendor)));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/subsystem_device", Hex4(spec.subsystem_device)));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/class", Hex6(spec.class_code)));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/numa_node", std::to_string(spec.numa_node)));
  if (spec.sriov_totalvfs >= 0) {
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/sriov_totalvfs", std::to_string(spec.sriov_totalvfs)));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/sriov_numvfs", std::to_string(spec.sriov_numvfs)));
  }
  RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "bus/pci"));
  if (!spec.driver.empty()) {
    std::string drv = "bus/pci/drivers/" + spec.driver;
    RDMAK8S_RETURN_IF_ERROR(Link(dir + "/driver", drv));
    RDMAK8S_RETURN_IF_ERROR(Link(drv + "/" + spec.address, dir));
  }
  RDMAK8S_RETURN_IF_ERROR(Link("bus/pci/devices/" + spec.address, dir));
  device_paths_[spec.address] = dir;
  return Status::Ok();
}

Status SysfsBuilder::AddVf(const std::string& pf_address, int vf_index, PciFunctionSpec vf) {
  std::string pf_dir = DevicePath(pf_address);
  if (pf_dir.empty()) return Record(NotFoundError("PF " + pf_address + " not built"));
  // A VF sits next to its PF, under the same upstream port.
  std::vector<std::string> chain;
  for (const auto& part : fs::path(pf_dir).parent_path()) chain.push_back(part.string());
  // chain: devices, pciDDDD:BB, [<root port>, <bridges...>]
  if (chain.size() < 2) return Record(InternalError("bad PF path " + pf_dir));
  vf.root_port = chain.size() > 2 ? chain[2] : std::string();
  vf.bridges.assign(chain.size() > 3 ? chain.begin() + 3 : chain.end(), chain.end());
  vf.sriov_totalvfs = -1;
  RDMAK8S_RETURN_IF_ERROR(AddPciFunction(vf));
  std::string vf_dir = DevicePath(vf.address);
  RDMAK8S_RETURN_IF_ERROR(Link(vf_dir + "/physfn", pf_dir));
  RDMAK8S_RETURN_IF_ERROR(Link(pf_dir + "/virtfn" + std::to_string(vf_index), vf_dir));
  // Count the PF's virtfn links for sriov_numvfs.
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(root_) / pf_dir, ec)) {
    if (e.path().filename().string().rfind("virtfn", 0) == 0) ++n;
  }
  return WriteAttr(pf_dir + "/sriov_numvfs", std::to_string(n));
}

Status SysfsBuilder::AddAuxDevice(const std::string& name, const std::string& pci_address,
                                  const std::string& driver) {
  std::string pci_dir = DevicePath(pci_address);
  if (pci_dir.empty()) return Record(NotFoundError("PCI function " + pci_address + " not built"));
  std::string dir = pci_dir + "/" + name;
  RDMAK8S_RETURN_IF_ERROR(MakeDirs(dir));
  RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "bus/auxiliary"));
  if (!driver.empty()) {
    std::string drv = "bus/auxiliary/drivers/" + driver;
    RDMAK8S_RETURN_IF_ERROR(Link(dir + "/driver", drv));
    RDMAK8S_RETURN_IF_ERROR(Link(drv + "/" + name, dir));
  }
  RDMAK8S_RETURN_IF_ERROR(Link("bus/auxiliary/devices/" + name, dir));
  device_paths_[name] = dir;
  return Status::Ok();
}

Status SysfsBuilder::AddCharDev(const std::string& klass, const std::string& name,
                                const std::string& parent_rel, const std::string& dev,
                                const std::string& rdma_dev, uint32_t port_num) {
  std::string base = parent_rel.empty() ? "devices/virtual" : parent_rel;
  std::string dir = base + "/" + klass + "/" + name;
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/dev", dev));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/ibdev", rdma_dev));
  if (port_num != 0) RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/port", std::to_string(port_num)));
  if (klass == "infiniband_verbs") RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/abi_version", "1"));
  if (!parent_rel.empty()) RDMAK8S_RETURN_IF_ERROR(Link(dir + "/device", parent_rel));
  RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "class/" + klass));
  std::string class_link = "class/" + klass + "/" + name;
  RDMAK8S_RETURN_IF_ERROR(Link(class_link, dir));
  char_devs_[rdma_dev].push_back(class_link);
  char_devs_[rdma_dev].push_back(dir);
  return Status::Ok();
}

Status SysfsBuilder::AddRdmaDevice(const RdmaDeviceSpec& spec) {
  std::string parent_rel;
  if (spec.parent != RdmaParent::kVirtual) {
    parent_rel = DevicePath(spec.parent_name);
    if (parent_rel.empty()) return Record(NotFoundError("parent " + spec.parent_name + " not built"));
  }
  std::string dir = (parent_rel.empty() ? std::string("devices/virtual") : parent_rel) +
                    "/infiniband/" + spec.name;
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/node_type", spec.node_type));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/node_guid", spec.node_guid));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/sys_image_guid", spec.sys_image_guid));
  if (!spec.fw_ver.empty()) RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/fw_ver", spec.fw_ver));
  if (!spec.hca_type.empty()) RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/hca_type", spec.hca_type));
  if (!spec.board_id.empty()) RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/board_id", spec.board_id));
  if (!spec.node_desc.empty()) {
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/node_desc", spec.node_desc));
  }
  if (!spec.parent_attr.empty()) {
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/parent", spec.parent_attr));
  }
  if (!parent_rel.empty()) RDMAK8S_RETURN_IF_ERROR(Link(dir + "/device", parent_rel));
  RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "class/infiniband"));
  for (const PortSpec& p : spec.ports) {
    std::string pd = dir + "/ports/" + std::to_string(p.port_num);
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/state", p.state));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/phys_state", p.phys_state));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/link_layer", p.link_layer));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/rate", p.rate));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/lid", p.lid));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/sm_lid", p.sm_lid));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/lid_mask_count", p.lid_mask_count));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/sm_sl", p.sm_sl));
    RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/cap_mask", p.cap_mask));
    for (uint32_t i = 0; i < p.pkey_table_len; ++i) {
      RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/pkeys/" + std::to_string(i),
                                        i < p.pkeys.size() ? p.pkeys[i] : "0x0000"));
    }
    for (const auto& [name, text] : p.counters) {
      RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/counters/" + name, text));
    }
    for (const auto& [name, text] : p.hw_counters) {
      RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/hw_counters/" + name, text));
    }
    std::vector<const GidSpec*> by_index(p.gid_table_len, nullptr);
    for (const GidSpec& g : p.gids) {
      if (g.index >= p.gid_table_len) {
        return Record(InvalidArgumentError("GID index " + std::to_string(g.index) +
                                           " outside table of " + spec.name));
      }
      by_index[g.index] = &g;
    }
    for (uint32_t i = 0; i < p.gid_table_len; ++i) {
      std::string idx = std::to_string(i);
      const GidSpec* g = by_index[i];
      RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/gids/" + idx, g ? g->gid : kZeroGid));
      if (g && !g->type.empty()) {
        RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/gid_attrs/types/" + idx, g->type));
      }
      if (g && !g->netdev.empty()) {
        RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/gid_attrs/ndevs/" + idx, g->netdev));
      }
    }
  }
  RDMAK8S_RETURN_IF_ERROR(Link("class/infiniband/" + spec.name, dir));
  device_paths_[spec.name] = dir;

  // Char devices hang off the RDMA device's parent (virtual for soft devices), like ib_uverbs
  // and ib_umad do.
  if (spec.uverbs) {
    int n = next_uverbs_++;
    if (!fs::exists(fs::path(root_) / "class/infiniband_verbs/abi_version")) {
      RDMAK8S_RETURN_IF_ERROR(WriteAttr("class/infiniband_verbs/abi_version", "6"));
    }
    RDMAK8S_RETURN_IF_ERROR(AddCharDev("infiniband_verbs", "uverbs" + std::to_string(n), parent_rel,
                                       "231:" + std::to_string(192 + n), spec.name, 0));
  }
  if (spec.umad) {
    if (!fs::exists(fs::path(root_) / "class/infiniband_mad/abi_version")) {
      RDMAK8S_RETURN_IF_ERROR(WriteAttr("class/infiniband_mad/abi_version", "5"));
    }
    for (const PortSpec& p : spec.ports) {
      int n = next_umad_++;
      RDMAK8S_RETURN_IF_ERROR(AddCharDev("infiniband_mad", "umad" + std::to_string(n), parent_rel,
                                         "231:" + std::to_string(n), spec.name, p.port_num));
      RDMAK8S_RETURN_IF_ERROR(AddCharDev("infiniband_mad", "issm" + std::to_string(n), parent_rel,
                                         "231:" + std::to_string(64 + n), spec.name, p.port_num));
    }
  }
  return Status::Ok();
}

Status SysfsBuilder::AddNetdev(const NetdevSpec& spec) {
  std::string parent_rel;
  if (!spec.parent_name.empty()) {
    parent_rel = DevicePath(spec.parent_name);
    if (parent_rel.empty()) return Record(NotFoundError("parent " + spec.parent_name + " not built"));
  }
  std::string dir = (parent_rel.empty() ? std::string("devices/virtual") : parent_rel) + "/net/" +
                    spec.name;
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/address", spec.address));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/dev_port", std::to_string(spec.dev_port)));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/operstate", spec.operstate));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/type", std::to_string(spec.type)));
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/ifindex", std::to_string(next_ifindex_++)));
  if (!parent_rel.empty()) RDMAK8S_RETURN_IF_ERROR(Link(dir + "/device", parent_rel));
  RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "class/net"));
  RDMAK8S_RETURN_IF_ERROR(Link("class/net/" + spec.name, dir));
  device_paths_["net:" + spec.name] = dir;
  for (const std::string& lower : spec.lowers) {
    std::string lower_dir = DevicePath("net:" + lower);
    if (lower_dir.empty()) return Record(NotFoundError("lower netdev " + lower + " not built"));
    RDMAK8S_RETURN_IF_ERROR(Link(lower_dir + "/upper_" + spec.name, dir));
    RDMAK8S_RETURN_IF_ERROR(Link(dir + "/lower_" + lower, lower_dir));
  }
  return Status::Ok();
}

Status SysfsBuilder::AddRdmaCm(const std::string& dev) {
  std::string dir = "devices/virtual/misc/rdma_cm";
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(dir + "/dev", dev));
  RDMAK8S_RETURN_IF_ERROR(Link(dir + "/subsystem", "class/misc"));
  return Link("class/misc/rdma_cm", dir);
}

Status SysfsBuilder::SetPortState(const std::string& rdma_dev, uint32_t port_num,
                                  const std::string& state, const std::string& phys_state) {
  std::string dir = DevicePath(rdma_dev);
  if (dir.empty()) return Record(NotFoundError("RDMA device " + rdma_dev + " not built"));
  std::string pd = dir + "/ports/" + std::to_string(port_num);
  if (!fs::is_directory(fs::path(root_) / pd)) {
    return Record(NotFoundError("port " + (fs::path(root_) / pd).string()));
  }
  RDMAK8S_RETURN_IF_ERROR(WriteAttr(pd + "/state", state));
  return WriteAttr(pd + "/phys_state", phys_state);
}

Status SysfsBuilder::RemoveDevice(const std::string& rdma_dev) {
  std::string dir = DevicePath(rdma_dev);
  if (dir.empty()) return Record(NotFoundError("RDMA device " + rdma_dev + " not built"));
  std::error_code ec;
  fs::remove(fs::path(root_) / "class/infiniband" / rdma_dev, ec);
  if (ec) return Record(ErrnoError(ec.value(), "remove class/infiniband/" + rdma_dev));
  for (const std::string& rel : char_devs_[rdma_dev]) {
    fs::remove_all(fs::path(root_) / rel, ec);
    if (ec) return Record(ErrnoError(ec.value(), "remove " + rel));
  }
  char_devs_.erase(rdma_dev);
  fs::remove_all(fs::path(root_) / dir, ec);
  if (ec) return Record(ErrnoError(ec.value(), "remove " + dir));
  device_paths_.erase(rdma_dev);
  return Status::Ok();
}

Status BuildScaleTree(SysfsBuilder& b, int num_devices, int vfs_per_pf, uint32_t gid_table_len) {
  if (num_devices < 0 || vfs_per_pf < 0 || vfs_per_pf > 7 || gid_table_len < 4) {
    return InvalidArgumentError("BuildScaleTree: bad sizes");
  }
  char buf[64];
  int n = 0;
  for (int pf = 0; n < num_devices; ++pf) {
    if (0x10 + pf > 0xff) return InvalidArgumentError("BuildScaleTree: too many PFs");
    PciFunctionSpec spec;
    std::snprintf(buf, sizeof(buf), "0000:%02x:00.0", 0x10 + pf);
    spec.address = buf;
    std::snprintf(buf, sizeof(buf), "0000:00:%02x.0", pf / 4);
    spec.root_port = buf;
    spec.numa_node = pf % 2;
    spec.sriov_totalvfs = vfs_per_pf > 0 ? 8 : -1;
    RDMAK8S_RETURN_IF_ERROR(b.AddPciFunction(spec));
    const std::string pf_address = spec.address;
    for (int f = 0; f <= vfs_per_pf && n < num_devices; ++f, ++n) {
      std::string address = pf_address;
      if (f > 0) {
        PciFunctionSpec vf = spec;
        std::snprintf(buf, sizeof(buf), "0000:%02x:00.%d", 0x10 + pf, f);
        vf.address = buf;
        vf.device = 0x101e;
        address = vf.address;
        RDMAK8S_RETURN_IF_ERROR(b.AddVf(pf_address, f - 1, vf));
      }
      const std::string netdev = "eth" + std::to_string(n);
      std::snprintf(buf, sizeof(buf), "02:00:00:00:%02x:%02x", (n >> 8) & 0xff, n & 0xff);
      RDMAK8S_RETURN_IF_ERROR(b.AddNetdev({netdev, address, 0, buf, "up", 1, {}}));
      RdmaDeviceSpec d;
      d.name = "mlx5_" + std::to_string(n);
      d.parent_name = address;
      std::snprintf(buf, sizeof(buf), "0200:00ff:fe00:%04x", n & 0xffff);
      d.node_guid = buf;
      d.sys_image_guid = buf;
      d.fw_ver = "22.36.1010";
      d.hca_type = f == 0 ? "MT4125" : "MT4126";
      d.board_id = "MT_0000000359";
      d.umad = true;
      PortSpec p;
      p.link_layer = "Ethernet";
      p.pkey_table_len = 1;
      p.pkeys = {"0xffff"};
      p.gid_table_len = gid_table_len;
      std::snprintf(buf, sizeof(buf), "fe80:0000:0000:0000:0000:00ff:fe00:%04x", n & 0xffff);
      std::string ll = buf;
      std::snprintf(buf, sizeof(buf), "0000:0000:0000:0000:0000:ffff:0a%02x:%04x", (n >> 16) & 0xff,
                    n & 0xffff);
      std::string v4 = buf;
      p.gids = {{0, ll, "IB/RoCE v1", netdev},
                {1, ll, "RoCE v2", netdev},
                {2, v4, "IB/RoCE v1", netdev},
                {3, v4, "RoCE v2", netdev}};
      d.ports = {p};
      RDMAK8S_RETURN_IF_ERROR(b.AddRdmaDevice(d));
    }
  }
  return b.AddRdmaCm();
}

}  // namespace rdmak8s::testing

namespace rdmak8s::testing {
namespace {

namespace fs = std::filesystem;

// Whether the entry at `rel` (relative to a sysfs root) is a netns-tagged one: a child of
// class/net, class/infiniband, or of a device's `net/` or `infiniband/` glue directory.
bool IsTagged(const fs::path& rel, bool shared) {
  std::vector<std::string> parts;
  for (const auto& p : rel) parts.push_back(p.string());
  auto tagged_dir = [&](const std::string& d) { return d == "net" || (d == "infiniband" && !shared); };
  if (parts.size() == 3 && parts[0] == "class") return tagged_dir(parts[1]);
  if (parts.size() >= 3 && parts[0] == "devices") return tagged_dir(parts[parts.size() - 2]);
  return false;
}

Status CopyEntry(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (ec) return ErrnoError(ec.value(), "mkdir " + to.parent_path().string());
  auto st = fs::symlink_status(from, ec);
  if (ec) return ErrnoError(ec.value(), "stat " + from.string());
  if (fs::is_symlink(st)) {
    fs::create_symlink(fs::read_symlink(from, ec), to, ec);
  } else if (fs::is_directory(st)) {
    fs::create_directory(to, ec);
  } else {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  }
  if (ec) return ErrnoError(ec.value(), "copy " + from.string() + " to " + to.string());
  return Status::Ok();
}

bool LinkExists(const fs::path& p) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(p, ec));
}

}  // namespace

NetnsSysfs::NetnsSysfs(std::string node_key, std::string node_root, std::string views_dir)
    : node_key_(std::move(node_key)), node_root_(std::move(node_root)), views_dir_(std::move(views_dir)) {
  roots_[node_key_] = node_root_;
}

void NetnsSysfs::SetSharedMode(std::function<bool()> shared) {
  std::lock_guard<std::mutex> l(mu_);
  shared_ = std::move(shared);
}

StatusOr<std::string> NetnsSysfs::RootOf(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  return RootOfLocked(key);
}

StatusOr<std::string> NetnsSysfs::RootOfLocked(const std::string& key) {
  if (auto it = roots_.find(key); it != roots_.end()) return it->second;
  const bool shared = shared_ && shared_();
  const fs::path root = fs::path(views_dir_) / ("netns" + std::to_string(roots_.size()));
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return ErrnoError(ec.value(), "mkdir " + root.string());
  const fs::path node(node_root_);
  for (auto it = fs::recursive_directory_iterator(node, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(node);
    if (IsTagged(rel, shared)) {
      it.disable_recursion_pending();
      continue;
    }
    RDMAK8S_RETURN_IF_ERROR(CopyEntry(it->path(), root / rel));
  }
  if (ec) return ErrnoError(ec.value(), "copy the untagged part of " + node_root_);
  // Every netns has its own lo (devices/virtual/net/lo).
  {
    SysfsBuilder b(root.string());
    RDMAK8S_RETURN_IF_ERROR(b.AddNetdev({"lo", "", 0, "00:00:00:00:00:00", "unknown", 772, {}}));
  }
  roots_[key] = root.string();
  return root.string();
}

std::vector<std::string> NetnsSysfs::RootsShowingLocked(const std::string& rdma_dev) {
  std::vector<std::string> out;
  for (const auto& [key, root] : roots_) {
    if (LinkExists(fs::path(root) / "class/infiniband" / rdma_dev)) out.push_back(key);
  }
  // The node first: it holds the device in exclusive mode unless it was moved.
  std::stable_partition(out.begin(), out.end(), [&](const std::string& k) { return k == node_key_; });
  return out;
}

Status NetnsSysfs::MoveTaggedLocked(const std::string& class_rel, const std::string& to_key) {
  std::string from_key;
  for (const auto& [key, root] : roots_) {
    if (LinkExists(fs::path(root) / class_rel)) from_key = key;
  }
  if (from_key.empty()) return NotFoundError("no netns view shows " + class_rel);
  if (from_key == to_key) return Status::Ok();
  RDMAK8S_ASSIGN_OR_RETURN(std::string to_root, RootOfLocked(to_key));
  const fs::path from(roots_[from_key]), to(to_root);
  std::error_code ec;
  const fs::path target = fs::read_symlink(from / class_rel, ec);
  if (ec) return ErrnoError(ec.value(), "readlink " + (from / class_rel).string());
  const fs::path dir_rel = (fs::path(class_rel).parent_path() / target).lexically_normal();
  fs::create_directories((to / dir_rel).parent_path(), ec);
  if (ec) return ErrnoError(ec.value(), "mkdir " + (to / dir_rel).parent_path().string());
  fs::rename(from / dir_rel, to / dir_rel, ec);
  if (ec) return ErrnoError(ec.value(), "move " + (from / dir_rel).string() + " to " + to.string());
  fs::create_directories((to / class_rel).parent_path(), ec);
  fs::rename(from / class_rel, to / class_rel, ec);
  if (ec) return ErrnoError(ec.value(), "move " + (from / class_rel).string() + " to " + to.string());
  return Status::Ok();
}

Status NetnsSysfs::MoveRdmaDevice(const std::string& rdma_dev, const std::string& to_key) {
  std::lock_guard<std::mutex> l(mu_);
  return MoveTaggedLocked("class/infiniband/" + rdma_dev, to_key);
}

Status NetnsSysfs::MoveNetdev(const std::string& name, const std::string& to_key) {
  std::lock_guard<std::mutex> l(mu_);
  return MoveTaggedLocked("class/net/" + name, to_key);
}

std::string NetnsSysfs::NetnsOf(const std::string& rdma_dev) {
  std::lock_guard<std::mutex> l(mu_);
  auto keys = RootsShowingLocked(rdma_dev);
  return keys.empty() ? "" : keys.front();
}

Status NetnsSysfs::WriteRdmaAttr(const std::string& rdma_dev, const std::string& rel,
                                 const std::string& text) {
  std::lock_guard<std::mutex> l(mu_);
  auto keys = RootsShowingLocked(rdma_dev);
  if (keys.empty()) return NotFoundError("no netns view shows RDMA device " + rdma_dev);
  for (const auto& key : keys) {
    const fs::path p = fs::path(roots_[key]) / "class/infiniband" / rdma_dev / rel;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    if (ec) return ErrnoError(ec.value(), "mkdir " + p.parent_path().string());
    RDMAK8S_RETURN_IF_ERROR(WriteWhole(roots_[key], p.string(), text + "\n"));
  }
  return Status::Ok();
}

Status NetnsSysfs::RemoveRdmaAttr(const std::string& rdma_dev, const std::string& rel) {
  std::lock_guard<std::mutex> l(mu_);
  auto keys = RootsShowingLocked(rdma_dev);
  if (keys.empty()) return NotFoundError("no netns view shows RDMA device " + rdma_dev);
  for (const auto& key : keys) {
    std::error_code ec;
    const fs::path p = fs::path(roots_[key]) / "class/infiniband" / rdma_dev / rel;
    if (!fs::remove(p, ec) || ec) return ErrnoError(ec ? ec.value() : ENOENT, "remove " + p.string());
  }
  return Status::Ok();
}

}  // namespace rdmak8s::testing
