#include "cni/rdma_sysfs.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "rdmak8s/device_id.h"
#include "rdmak8s/file_util.h"

namespace rdmak8s::cni {

namespace {

StatusOr<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return ErrnoError(errno, "list " + path);
  std::vector<std::string> out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// An open descriptor, closed with this object.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A sysfs attribute's text without its trailing newline: `name` opened relative to the
// directory `dir` (AT_FDCWD: a path), `shown` naming it in errors.
StatusOr<std::string> ReadAttrAt(int dir, const char* name, const std::string& shown) {
  int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "read " + shown);
  char buf[512];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  int e = errno;
  close(fd);
  if (n < 0) return ErrnoError(e, "read " + shown);
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

StatusOr<std::string> ReadAttr(const std::string& path) { return ReadAttrAt(AT_FDCWD, path.c_str(), path); }

// The target of the symlink at `path`; "" if it is none or cannot be read.
std::string ReadLink(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

// The name of what a sysfs `device` link points at: the kernel links a device to its own
// directory, whose last component is the device's name.
std::string LinkBasename(const std::string& path) {
  std::string target = ReadLink(path);
  return target.empty() ? "" : Basename(target);
}

}  // namespace

bool ParseGid(const std::string& text, unsigned char out[16]) {
  return inet_pton(AF_INET6, text.c_str(), out) == 1;
}

std::string GidForIp(const std::string& ip) {
  unsigned char b[16] = {0};
  unsigned char v4[4];
  if (inet_pton(AF_INET, ip.c_str(), v4) == 1) {
    b[10] = 0xff;
    b[11] = 0xff;
    std::copy(v4, v4 + 4, b + 12);
  } else if (inet_pton(AF_INET6, ip.c_str(), b) != 1) {
    return "";
  }
  char s[40];
  std::snprintf(s, sizeof s, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                b[13], b[14], b[15]);
  return s;
}

StatusOr<std::vector<std::string>> RdmaSysfs::ListDevices() const {
  return ListDir(root_ + "/class/infiniband");
}

StatusOr<PortState> RdmaSysfs::ReadPortState(const std::string& dev, uint32_t port) const {
  RDMAK8S_ASSIGN_OR_RETURN(
      std::string s,
      ReadAttr(root_ + "/class/infiniband/" + dev + "/ports/" + std::to_string(port) + "/state"));
  int n = std::atoi(s.c_str());  // "4: ACTIVE"
  if (n < 0 || n > 5) return InternalError("port state \"" + s + "\" of " + dev + " not understood");
  return static_cast<PortState>(n);
}

StatusOr<SysfsDevice> RdmaSysfs::ReadDevice(const std::string& name) const {
  const std::string base = root_ + "/class/infiniband/" + name;
  SysfsDevice d;
  d.name = name;
  RDMAK8S_ASSIGN_OR_RETURN(std::string node_type, ReadAttr(base + "/node_type"));
  d.parent_rel = Resolve("class/infiniband/" + name + "/device");
  if (!d.parent_rel.empty()) d.parent = Basename(d.parent_rel);
  if (auto p = ReadAttr(base + "/parent"); p.ok()) d.lower_netdev = *p;
  RDMAK8S_ASSIGN_OR_RETURN(auto ports, ListDir(base + "/ports"));
  for (const auto& p : ports) {
    SysfsPort port;
    port.port_num = static_cast<uint32_t>(std::atoi(p.c_str()));
    RDMAK8S_ASSIGN_OR_RETURN(port.state, ReadPortState(name, port.port_num));
    RDMAK8S_ASSIGN_OR_RETURN(port.link_layer, ReadAttr(base + "/ports/" + p + "/link_layer"));
    d.ports.push_back(port);
  }
  std::sort(d.ports.begin(), d.ports.end(),
            [](auto& a, auto& b) { return a.port_num < b.port_num; });
  if (std::atoi(node_type.c_str()) == static_cast<int>(NodeType::kRnic)) {
    d.transport = Transport::kIwarp;
  } else if (!d.ports.empty() && d.ports[0].link_layer == "InfiniBand") {
    d.transport = Transport::kIb;
  } else if (!d.ports.empty() && d.ports[0].link_layer == "Ethernet") {
    d.transport = Transport::kRoce;
  }
  return d;
}

StatusOr<std::vector<SysfsGid>> RdmaSysfs::ReadGids(const std::string& dev, uint32_t port) const {
  const std::string base = root_ + "/class/infiniband/" + dev + "/ports/" + std::to_string(port);
  RDMAK8S_ASSIGN_OR_RETURN(auto names, ListDir(base + "/gids"));
  std::vector<SysfsGid> out;
  for (const auto& n : names) {
    auto g = ReadAttr(base + "/gids/" + n);
    if (!g.ok()) {
      if (g.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
      return g.status();
    }
    unsigned char b[16];
    if (!ParseGid(*g, b)) continue;
    if (std::all_of(b, b + 16, [](unsigned char c) { return c == 0; })) continue;
    SysfsGid gid;
    gid.index = static_cast<uint32_t>(std::atoi(n.c_str()));
    gid.gid = *g;
    // The kernel answers EINVAL for attributes of empty/IB GIDs: absent, not an error.
    if (auto t = ReadAttr(base + "/gid_attrs/types/" + n); t.ok()) gid.type = *t;
    if (auto nd = ReadAttr(base + "/gid_attrs/ndevs/" + n); nd.ok()) gid.netdev = *nd;
    out.push_back(gid);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.index < b.index; });
  return out;
}

StatusOr<std::vector<uint16_t>> RdmaSysfs::ReadPkeys(const std::string& dev, uint32_t port) const {
  const std::string base = root_ + "/class/infiniband/" + dev + "/ports/" + std::to_string(port) +
                           "/pkeys";
  RDMAK8S_ASSIGN_OR_RETURN(auto names, ListDir(base));
  std::vector<uint16_t> out;
  for (const auto& n : names) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string v, ReadAttr(base + "/" + n));
    long k = std::strtol(v.c_str(), nullptr, 0);
    if (k != 0) out.push_back(static_cast<uint16_t>(k));
  }
  return out;
}

StatusOr<std::string> RdmaSysfs::ResolveByParent(const std::string& parent) const {
  RDMAK8S_ASSIGN_OR_RETURN(auto devs, ListDevices());
  std::vector<std::string> hits;
  for (const auto& d : devs) {
    if (LinkBasename(root_ + "/class/infiniband/" + d + "/device") == parent) hits.push_back(d);
  }
  if (hits.empty()) return NotFoundError("no RDMA device on bus device " + parent);
  if (hits.size() > 1) {
    std::string all;
    for (const auto& h : hits) all += (all.empty() ? "" : ", ") + h;
    return InvalidArgumentError("several RDMA devices on bus device " + parent + ": " + all +
                                "; set deviceID to one RDMA device name");
  }
  return hits[0];
}

StatusOr<std::string> RdmaSysfs::ResolveDeviceId(const std::string& id) const {
  if (id.empty() || id.find('/') != std::string::npos || id == "." || id == "..") {
    return InvalidArgumentError("deviceID \"" + id + "\" is not a device name");
  }
  if (access((root_ + "/class/infiniband/" + id).c_str(), F_OK) == 0) return id;
  if (IsBusDeviceId(id)) {
    auto r = ResolveByParent(id);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
  }
  // A shared pool's device ID "<rdma_dev>-<k>" (rdmak8s-device-plugin), which Multus hands every
  // plugin of the chain as deviceID.
  if (auto dev = SharedDeviceIdDevice(id);
      dev && access((root_ + "/class/infiniband/" + *dev).c_str(), F_OK) == 0) {
    return *dev;
  }
  return NotFoundError("deviceID " + id + ": no RDMA device, PCI function or auxiliary device " +
                       "of that name (nor a shared ID <rdma_dev>-<k>) has an RDMA device under " +
                       root_ + "/class/infiniband");
}

StatusOr<std::string> RdmaSysfs::ResolveHiddenDeviceId(const std::string& id) const {
  const std::string verbs = root_ + "/class/infiniband_verbs";
  auto entries = ListDir(verbs);
  if (!entries.ok()) return entries.status();
  const auto shared_dev = SharedDeviceIdDevice(id);
  for (const auto& e : *entries) {
    if (e.rfind("uverbs", 0) != 0) continue;
    auto ibdev = ReadAttr(verbs + "/" + e + "/ibdev");
    if (!ibdev.ok()) continue;  // unregistered meanwhile
    const bool named = *ibdev == id || (shared_dev && *ibdev == *shared_dev) ||
                       (IsBusDeviceId(id) && LinkBasename(verbs + "/" + e + "/device") == id);
    if (named && access((root_ + "/class/infiniband/" + *ibdev).c_str(), F_OK) != 0) return *ibdev;
  }
  return NotFoundError("deviceID " + id + ": no uverbs device under " + verbs + " names it");
}

StatusOr<std::map<std::string, uint32_t>> RdmaSysfs::FindGids(
    const std::string& dev, uint32_t port, const std::set<std::string>& wanted,
    const std::string& type) const {
  RDMAK8S_ASSIGN_OR_RETURN(GidSearch r, SearchGids(dev, port, wanted, type, GidScope::kWholeTable));
  return std::move(r.found);
}

StatusOr<GidSearch> RdmaSysfs::SearchGids(const std::string& dev, uint32_t port,
                                          const std::set<std::string>& wanted, const std::string& type,
                                          GidScope scope) const {
  const std::string base = root_ + "/class/infiniband/" + dev + "/ports/" + std::to_string(port);
  GidSearch r;
  if (wanted.empty()) return r;
  const std::string gids_path = base + "/gids", types_path = base + "/gid_attrs/types";
  std::vector<uint32_t> indexes;  // kWholeTable: every slot listed
  if (scope == GidScope::kWholeTable) {
    RDMAK8S_ASSIGN_OR_RETURN(auto names, ListDir(gids_path));
    indexes.reserve(names.size());
    for (const auto& n : names) indexes.push_back(static_cast<uint32_t>(std::atoi(n.c_str())));
    std::sort(indexes.begin(), indexes.end());
    r.first_free = indexes.empty() ? 0 : indexes.back() + 1;
  }
  Fd gids(open(gids_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (gids.get() < 0) return ErrnoError(errno, "list " + gids_path);
  std::optional<Fd> types;  // opened for the first wanted GID
  bool free_seen = false;
  for (size_t k = 0;; ++k) {
    uint32_t i;
    if (scope == GidScope::kWholeTable) {
      if (k == indexes.size()) break;
      i = indexes[k];
    } else {
      i = static_cast<uint32_t>(k);
    }
    const std::string idx = std::to_string(i);
    auto g = ReadAttrAt(gids.get(), idx.c_str(), gids_path + "/" + idx);
    if (!g.ok()) {
      if (g.status().code() != StatusCode::kNotFound) return g.status();
      if (scope == GidScope::kFilledPrefix) {  // past the table's end
        if (!free_seen) r.first_free = i;
        break;
      }
      continue;  // removed meanwhile
    }
    ++r.slots_read;
    unsigned char bytes[16];
    const bool empty = !ParseGid(*g, bytes) ||
                       std::all_of(bytes, bytes + 16, [](unsigned char c) { return c == 0; });
    if (empty && i >= kFirstFreeGidIndex && !free_seen) {
      free_seen = true;
      r.first_free = i;
      if (scope == GidScope::kFilledPrefix) break;
    }
    if (empty) continue;
    const std::string gid = GidForIp(*g);  // the same spelling as `wanted`
    if (!wanted.count(gid) || r.found.count(gid)) continue;
    if (!types) {
      types.emplace(open(types_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (types->get() < 0) continue;  // no attributes: no type to match
    }
    // The kernel answers EINVAL for attributes of an entry freed meanwhile: not this type.
    auto t = ReadAttrAt(types->get(), idx.c_str(), types_path + "/" + idx);
    if (!t.ok() || *t != type) continue;
    r.found[gid] = i;
    if (r.found.size() == wanted.size()) break;
  }
  return r;
}

std::string RdmaSysfs::NetdevBusDevice(const std::string& netdev) const {
  return LinkBasename(root_ + "/class/net/" + netdev + "/device");
}

std::string RdmaSysfs::Resolve(const std::string& rel) const {
  namespace fs = std::filesystem;
  fs::path cur;
  for (const auto& part : fs::path(rel)) {
    fs::path next = cur / part;
    const std::string full = root_ + "/" + next.string();
    char buf[PATH_MAX];
    ssize_t n = readlink(full.c_str(), buf, sizeof buf - 1);
    if (n >= 0) {
      std::string target(buf, static_cast<size_t>(n));
      if (!target.empty() && target.front() == '/') return "";  // leaves the tree
      next = (cur / target).lexically_normal();
      if (next.empty() || *next.begin() == "..") return "";
    } else if (errno != EINVAL) {  // EINVAL: not a link
      return "";
    }
    cur = next;
  }
  return cur.string();
}

uint32_t RdmaSysfs::NetdevPort(const std::string& netdev) const {
  auto p = ReadAttr(root_ + "/class/net/" + netdev + "/dev_port");
  return p.ok() ? static_cast<uint32_t>(std::atoi(p->c_str())) + 1 : 0;
}

StatusOr<std::string> RdmaSysfs::ResolveByNetdev(const std::string& netdev,
                                                 uint32_t* port_num) const {
  const std::string base = root_ + "/class/net/" + netdev;
  if (access(base.c_str(), F_OK) != 0) return ErrnoError(errno, "netdev " + netdev + " in " + root_);
  if (uint32_t port = NetdevPort(netdev); port != 0 && port_num != nullptr) *port_num = port;
  // A hardware RDMA device sits on the netdev's bus device. None there is no verdict: soft
  // RoCE/iWARP (rxe, siw) over a real or virtio NIC has no bus device of its own.
  if (std::string bus = NetdevBusDevice(netdev); !bus.empty()) {
    auto r = ResolveByParent(bus);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
  }
  // Soft devices: rxe names its netdev in `parent`; any device may list it as a GID's ndev.
  RDMAK8S_ASSIGN_OR_RETURN(auto devs, ListDevices());
  for (const auto& d : devs) {
    auto p = ReadAttr(root_ + "/class/infiniband/" + d + "/parent");
    if (p.ok() && *p == netdev) return d;
  }
  // Stacked netdevs (VLAN, bond slave chains): follow lower_* links.
  if (auto entries = ListDir(base); entries.ok()) {
    for (const auto& e : *entries) {
      if (e.rfind("lower_", 0) == 0) {
        auto r = ResolveByNetdev(e.substr(6), port_num);
        if (r.ok() || r.status().code() != StatusCode::kNotFound) return r;
      }
    }
  }
  for (const auto& d : devs) {
    auto ports = ListDir(root_ + "/class/infiniband/" + d + "/ports");
    if (!ports.ok()) continue;
    for (const auto& p : *ports) {
      auto ndevs = ListDir(root_ + "/class/infiniband/" + d + "/ports/" + p + "/gid_attrs/ndevs");
      if (!ndevs.ok()) continue;
      for (const auto& i : *ndevs) {
        auto nd = ReadAttr(root_ + "/class/infiniband/" + d + "/ports/" + p + "/gid_attrs/ndevs/" + i);
        if (nd.ok() && *nd == netdev) {
          if (port_num != nullptr) *port_num = static_cast<uint32_t>(std::atoi(p.c_str()));
          return d;
        }
      }
    }
  }
  return NotFoundError("no RDMA device behind netdev " + netdev);
}

StatusOr<std::string> RdmaSysfs::PfNetdev(const SysfsDevice& dev) const {
  if (dev.parent_rel.empty()) {
    if (!dev.lower_netdev.empty()) return dev.lower_netdev;
    return NotFoundError("RDMA device " + dev.name + " has neither a bus device nor a parent netdev");
  }
  // Relative to this view's root: a device read in the pod's view finds its PF netdev in the
  // node's (devices/ is not netns tagged, the PF's net/ entries are the node's).
  std::string pci = dev.parent_rel;
  // An auxiliary device (SF) sits under the PCI function that owns it.
  if (access((root_ + "/" + pci + "/net").c_str(), F_OK) != 0 || !IsPciAddress(dev.parent)) {
    if (access((root_ + "/" + pci + "/physfn").c_str(), F_OK) != 0) pci = Dirname(pci);
  }
  if (std::string pf = Resolve(pci + "/physfn"); !pf.empty()) pci = pf;
  auto nets = ListDir(root_ + "/" + pci + "/net");
  if (!nets.ok()) return nets.status().Prepend("netdev of the PF of " + dev.name);
  if (nets->empty()) return NotFoundError("PF " + Basename(pci) + " of " + dev.name + " has no netdev");
  return (*nets)[0];
}

}  // namespace rdmak8s::cni
