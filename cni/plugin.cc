#include "cni/plugin.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>

#include "cni/knobs.h"
#include "cni/log.h"
#include "cni/netconf.h"
#include "cni/rdma_sysfs.h"
#include "cni/spec.h"
#include "cni/state.h"
#include "rdmak8s/netns.h"

namespace rdmak8s::cni {

using nlohmann::json;

namespace {

// Another live attachment of rec's pod over rec's device: it keeps the device in the pod when
// rec leaves, and brings it home itself. nullptr when there is none.
const AttachmentRecord* OtherHolder(const std::vector<AttachmentRecord>& records,
                                    const AttachmentRecord& rec) {
  for (const auto& o : records) {
    if (o.Key() != rec.Key() && o.rdma_dev == rec.rdma_dev && o.netns == rec.netns) return &o;
  }
  return nullptr;
}

// Whether two directory names name the same directory, lexically ("/sys" and "/sys/").
bool SameDir(const std::string& a, const std::string& b) {
  auto norm = [](const std::string& p) {
    std::string n = std::filesystem::path(p).lexically_normal().string();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    return n;
  };
  return norm(a) == norm(b);
}

std::string Join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

class Invocation {
 public:
  // `paths`: the node's, with the netconf's overrides when the node allows them.
  // `sysfs_as_is`: the sysfs root is a tree to read as is (a netconf override), not the node's.
  Invocation(const PluginOptions& o, CniEnv env, NetConf conf, const NodeConfig& paths,
             bool sysfs_as_is, Logger& log)
      : o_(o),
        env_(std::move(env)),
        conf_(std::move(conf)),
        log_(log),
        sysfs_root_(paths.sysfs_root),
        configfs_root_(paths.configfs_root),
        host_sysfs_(sysfs_root_),
        store_(paths.state_dir, [&log](const std::string& m) { log.Error(m); }) {
    // The pod's view is the node's sysfs seen from the pod's netns: for the node's own sysfs
    // root, however it was named. Another root (a netconf override: a fixture tree) is read as is.
    if (o.pod_sysfs != nullptr && !sysfs_as_is) {
      view_ = o.pod_sysfs;
    } else {
      fixed_view_ = std::make_unique<FixedSysfsView>(sysfs_root_);
      view_ = fixed_view_.get();
    }
  }

  int code() const { return code_; }

  Status Add(json* result);
  Status Del();
  Status Check();
  Status Gc();
  Status StatusCmd();

 private:
  Status Fail(int code, Status s) {
    code_ = code;
    return s;
  }

  StatusOr<std::unique_ptr<RdmaNetlink>> RdmaIn(const Netns* ns);
  StatusOr<std::unique_ptr<RouteNetlink>> RouteIn(const Netns* ns);
  StatusOr<std::unique_ptr<DcbNetlink>> Dcb();
  // The RDMA device of this attachment, and where its sysfs shows: the node's view, or (*in_pod)
  // the pod's, where exclusive mode hides a device already in the pod from the node's sysfs.
  Status ResolveDevice(const Netns& pod, std::string* dev, uint32_t* port, bool* in_pod);
  // The pod's sysfs view for this invocation: opened on first use (one sysfs mount), released
  // when the invocation ends.
  StatusOr<std::string> PodSysfsRoot(const Netns& pod);
  Status InPodSysfs(const Netns& pod, const std::function<Status(const std::string&)>& fn);
  // IB: each port ACTIVE, pkey in its table; read from `sys` (where the device shows).
  Status CheckUsable(const RdmaSysfs& sys, const SysfsDevice& dev, const std::vector<uint32_t>& ports);
  StatusOr<bool> DeviceVisibleIn(const Netns* ns, const std::string& dev);
  // 103 naming both when another live attachment needs one of rec's knobs at another value.
  Status CheckKnobConflicts(const AttachmentRecord& rec);
  Status ApplyKnobs(AttachmentRecord* rec, DcbNetlink* dcb, const Netns* pod);
  Status CheckKnobs(const AttachmentRecord& rec, DcbNetlink* dcb, const Netns* pod);
  // Waits up to timeout_ms for the RoCE v2 GID of each IP of the pod interface; `report` logs
  // the GID index found for each (ADD).
  Status CheckGids(const AttachmentRecord& rec, const Netns& pod, const std::vector<uint32_t>& ports,
                   int timeout_ms, bool report);
  Status EnsureIpv6(const Netns& pod);
  // Undoes everything `rec` says was done; removes it when the device is home (knobs that could
  // not be restored keep their originals in knobs.json: see RestoreUnneededKnobs).
  Status Release(const AttachmentRecord& rec);
  // Restores every knob whose original is saved in knobs.json and that no live attachment other
  // than `leaving` (a record key, or "") needs: `leaving`'s own and any an earlier release could
  // not restore. Those it cannot restore keep their original and are appended to *pending.
  // Fails only when the state store can't be used.
  // `in_pod_dev`/`in_pod_root`: an RDMA device that stays in a pod (another attachment keeps
  // it there) and the sysfs root where it shows: its device knobs (tc) are read and written there.
  Status RestoreUnneededKnobs(const std::string& leaving, std::vector<std::string>* pending,
                              const std::string& in_pod_dev = "", const std::string& in_pod_root = "");
  // RestoreUnneededKnobs for no leaving attachment, logging what is still not restored: a DEL
  // with nothing to undo and a GC with nothing stale still retry what an earlier release left.
  Status RetryUnrestoredKnobs();
  // The sysfs root under which `rec`'s device shows now, for fn.
  Status WithDeviceSysfs(const AttachmentRecord& rec, const Netns* pod,
                         const std::function<Status(const std::string&)>& fn);
  std::vector<uint32_t> PortsOf(const SysfsDevice& dev, uint32_t resolved_port) const;

  const PluginOptions& o_;
  CniEnv env_;
  NetConf conf_;
  Logger& log_;
  std::string sysfs_root_;
  std::string configfs_root_;
  RdmaSysfs host_sysfs_;
  StateStore store_;
  std::unique_ptr<FixedSysfsView> fixed_view_;
  SysfsView* view_ = nullptr;
  std::map<std::string, std::unique_ptr<SysfsRoot>> pod_roots_;  // by netns path
  int code_ = kErrIo;
};

StatusOr<std::unique_ptr<RdmaNetlink>> Invocation::RdmaIn(const Netns* ns) {
  if (!o_.new_rdma_netlink) return UnimplementedError("no RDMA netlink in this build");
  if (ns == nullptr) return o_.new_rdma_netlink();
  std::unique_ptr<RdmaNetlink> nl;
  RDMAK8S_RETURN_IF_ERROR(RunInNetns(*ns, [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(nl, o_.new_rdma_netlink());
    return Status::Ok();
  }));
  return nl;
}

StatusOr<std::unique_ptr<RouteNetlink>> Invocation::RouteIn(const Netns* ns) {
  if (!o_.new_route_netlink) return UnimplementedError("no rtnetlink in this build");
  if (ns == nullptr) return o_.new_route_netlink();
  std::unique_ptr<RouteNetlink> nl;
  RDMAK8S_RETURN_IF_ERROR(RunInNetns(*ns, [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(nl, o_.new_route_netlink());
    return Status::Ok();
  }));
  return nl;
}

StatusOr<std::unique_ptr<DcbNetlink>> Invocation::Dcb() {
  if (!o_.new_dcb_netlink) return UnimplementedError("no DCB netlink in this build");
  return o_.new_dcb_netlink();
}

StatusOr<std::string> Invocation::PodSysfsRoot(const Netns& pod) {
  auto it = pod_roots_.find(pod.path());
  if (it == pod_roots_.end()) {
    RDMAK8S_ASSIGN_OR_RETURN(auto root, view_->Open(pod));
    it = pod_roots_.emplace(pod.path(), std::move(root)).first;
  }
  return it->second->path();
}

Status Invocation::InPodSysfs(const Netns& pod, const std::function<Status(const std::string&)>& fn) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string root, PodSysfsRoot(pod));
  return fn(root);
}

std::vector<uint32_t> Invocation::PortsOf(const SysfsDevice& dev, uint32_t resolved_port) const {
  const uint32_t want = conf_.port != 0 ? conf_.port : resolved_port;
  std::vector<uint32_t> ports, active;
  for (const auto& p : dev.ports) {
    if (want == 0 || p.port_num == want) ports.push_back(p.port_num);
    if (p.state == PortState::kActive) active.push_back(p.port_num);
  }
  // No port in the netconf and none from the netdev's dev_port (deviceID, a VF parent): an
  // unused port (the DOWN second port of an IB HCA) must not fail the attachment. Use the
  // ACTIVE ones; when none is, all of them, and CheckUsable says why each is not.
  if (want == 0 && !active.empty()) return active;
  return ports;
}

Status Invocation::ResolveDevice(const Netns& pod, std::string* dev, uint32_t* port, bool* in_pod) {
  *in_pod = false;
  if (!conf_.device_id.empty()) {
    const std::string& id = conf_.device_id;
    auto r = host_sysfs_.ResolveDeviceId(id);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) {
      if (!r.ok()) return Fail(kErrDeviceNotFound, r.status());
      *dev = *r;
      return Status::Ok();
    }
    // Exclusive mode: the node's sysfs no longer shows a device in a pod (class/infiniband is
    // netns tagged). A re-ADD, or another attachment of this pod over the same device, finds it
    // in the pod's view.
    StatusOr<std::string> there = r.status();
    Status s = InPodSysfs(pod, [&](const std::string& root) -> Status {
      there = RdmaSysfs(root).ResolveDeviceId(id);
      return Status::Ok();
    });
    if (!s.ok()) return Fail(kErrDeviceNotFound, s.Prepend("deviceID " + id + ": the pod's sysfs"));
    if (there.ok()) {
      *dev = *there;
      *in_pod = true;
      return Status::Ok();
    }
    if (there.status().code() != StatusCode::kNotFound) return Fail(kErrDeviceNotFound, there.status());
    // Neither view shows it, but its uverbs char device (not netns tagged) is on the node.
    if (auto hidden = host_sysfs_.ResolveHiddenDeviceId(id); hidden.ok()) {
      return Fail(kErrWiring, FailedPreconditionError(
                                  "RDMA device " + *hidden + " (deviceID " + id +
                                  ") is in a network namespace other than the node's and this "
                                  "pod's: held by another pod?"));
    }
    return Fail(kErrDeviceNotFound, r.status());
  }
  // No deviceID: follow CNI_IFNAME in the pod to its RDMA device.
  auto route = RouteIn(&pod);
  if (!route.ok()) return Fail(kErrIo, route.status().Prepend("open rtnetlink in the pod"));
  auto link = (*route)->GetLinkByName(env_.ifname);
  if (!link.ok()) {
    return Fail(kErrDeviceNotFound,
                link.status().Prepend("no deviceID, and interface " + env_.ifname +
                                      " of the pod could not be read"));
  }
  const std::string what = "find the RDMA device of pod interface " + env_.ifname;
  static const std::set<std::string> kStacked = {"macvlan", "macvtap", "ipvlan", "ipvtap", "vlan",
                                                 "ipoib"};
  // Down the stacked links to the netdev on the device. A lower device is in the same netns as
  // its upper unless IFLA_LINK_NETNSID names another one: a pod interface made on the node and
  // moved in (macvlan, ipvlan, vlan, IPoIB child) names the node's netns, where we run. A vlan
  // made inside the pod on a pod-local link (a VF moved in) has none: its lower is in the pod.
  const Netns* ns = &pod;  // where `cur` lives; nullptr: the node
  RouteNetlink* rt = route->get();
  std::unique_ptr<RouteNetlink> host_route;
  LinkInfo cur = *link;
  for (int depth = 0; cur.parent_dev.empty() && cur.link_ifindex > 0 && kStacked.count(cur.kind);
       ++depth) {
    if (depth == 8) {
      return Fail(kErrDeviceNotFound, NotFoundError(what + ": more than 8 stacked links"));
    }
    if (cur.link_netnsid >= 0) {
      if (ns == nullptr) {
        return Fail(kErrDeviceNotFound,
                    NotFoundError(what + ": the lower device of " + cur.name +
                                  " is in a netns other than the node's (netnsid " +
                                  std::to_string(cur.link_netnsid) + "): pass deviceID"));
      }
      auto h = RouteIn(nullptr);
      if (!h.ok()) return Fail(kErrIo, h.status().Prepend(what));
      host_route = std::move(*h);
      rt = host_route.get();
      ns = nullptr;
    }
    auto lower = rt->GetLinkByIndex(cur.link_ifindex);
    if (!lower.ok()) {
      return Fail(kErrDeviceNotFound,
                  lower.status().Prepend(what + ": lower device (ifindex " +
                                         std::to_string(cur.link_ifindex) + ", in the " +
                                         (ns == nullptr ? "node" : "pod") + "'s netns) of " +
                                         cur.kind + " " + cur.name));
    }
    cur = *lower;
  }
  const std::string via = what + " via " + cur.name;
  if (ns == nullptr) {  // a netdev of the node: the node's sysfs shows it and its device
    auto r = host_sysfs_.ResolveByNetdev(cur.name, port);
    if (!r.ok()) return Fail(kErrDeviceNotFound, r.status().Prepend(via));
    *dev = *r;
    return Status::Ok();
  }
  if (!cur.parent_dev.empty()) {  // a VF or host-device netdev (IFLA_PARENT_DEV_NAME, 5.16+)
    auto r = host_sysfs_.ResolveByParent(cur.parent_dev);
    std::optional<RdmaSysfs> pod_sysfs;
    if (!r.ok() && r.status().code() == StatusCode::kNotFound) {
      // Already in the pod (exclusive mode): only the pod's view shows it.
      auto root = PodSysfsRoot(pod);
      if (!root.ok()) return Fail(kErrDeviceNotFound, root.status().Prepend(via));
      pod_sysfs.emplace(*root);
      if (auto in_view = pod_sysfs->ResolveByParent(cur.parent_dev); in_view.ok()) {
        r = std::move(in_view);
        *in_pod = true;
      }
    }
    if (!r.ok()) return Fail(kErrDeviceNotFound, r.status().Prepend(via));
    *dev = *r;
    // Which port only matters on a multi-port device, and costs a sysfs mount to learn.
    const RdmaSysfs& where = *in_pod ? *pod_sysfs : host_sysfs_;
    if (auto d = where.ReadDevice(*r); d.ok() && d->ports.size() > 1) {
      Status ps = InPodSysfs(pod, [&](const std::string& root) -> Status {
        if (uint32_t n = RdmaSysfs(root).NetdevPort(cur.name); n != 0) *port = n;
        return Status::Ok();
      });
      if (!ps.ok()) {
        log_.Warning("dev_port of " + cur.name + " unreadable (" + ps.message() +
                     "): using the device's ACTIVE ports");
      }
    }
    return Status::Ok();
  }
  // A netdev in the pod. Its sysfs is the pod's view (class/net is netns tagged), which in
  // exclusive mode does not show the RDMA devices still in the node: read only its bus device
  // and dev_port there, and find the RDMA device in the node's sysfs. The view's own answer
  // serves when that finds nothing (a soft device over a pod netdev, shared mode).
  std::string bus;
  uint32_t view_port = 0;
  StatusOr<std::string> in_view = NotFoundError("no RDMA device behind netdev " + cur.name);
  Status s = InPodSysfs(pod, [&](const std::string& root) -> Status {
    const std::string base = root + "/class/net/" + cur.name;
    if (access(base.c_str(), F_OK) != 0) {
      return ErrnoError(errno, "netdev " + cur.name + " in the pod's sysfs (" + root + ")");
    }
    RdmaSysfs view(root);
    bus = view.NetdevBusDevice(cur.name);
    in_view = view.ResolveByNetdev(cur.name, &view_port);
    return Status::Ok();
  });
  if (!s.ok()) return Fail(kErrDeviceNotFound, s.Prepend(what));
  if (!bus.empty()) {
    auto r = host_sysfs_.ResolveByParent(bus);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) {
      if (!r.ok()) return Fail(kErrDeviceNotFound, r.status().Prepend(via));
      *dev = *r;
      *port = view_port;
      return Status::Ok();
    }
  }
  if (!in_view.ok()) return Fail(kErrDeviceNotFound, in_view.status().Prepend(via));
  *dev = *in_view;
  *port = view_port;
  *in_pod = true;
  return Status::Ok();
}

Status Invocation::CheckUsable(const RdmaSysfs& sys, const SysfsDevice& dev,
                               const std::vector<uint32_t>& ports) {
  if (ports.empty()) {
    return Fail(kErrInvalidConfig, InvalidArgumentError("RDMA device " + dev.name + " has no port " +
                                                        std::to_string(conf_.port)));
  }
  if (dev.transport != Transport::kIb) return Status::Ok();
  for (auto port : ports) {
    auto st = sys.ReadPortState(dev.name, port);
    if (!st.ok()) return Fail(kErrIo, st.status());
    const std::string where = dev.name + " port " + std::to_string(port);
    if (*st == PortState::kInit || *st == PortState::kArmed) {
      return Fail(kErrTryAgainLater,
                  UnavailableError("InfiniBand port " + where + " is " +
                                   std::string(PortStateName(*st)) +
                                   ", not ACTIVE (subnet manager not done yet)"));
    }
    if (*st != PortState::kActive) {
      return Fail(kErrWiring, FailedPreconditionError("InfiniBand port " + where + " is " +
                                                      std::string(PortStateName(*st))));
    }
    if (conf_.pkey) {
      auto pkeys = sys.ReadPkeys(dev.name, port);
      if (!pkeys.ok()) return Fail(kErrIo, pkeys.status());
      bool found = std::any_of(pkeys->begin(), pkeys->end(),
                               [&](uint16_t k) { return (k & 0x7fff) == (*conf_.pkey & 0x7fff); });
      if (!found) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%04x", *conf_.pkey);
        return Fail(kErrInvalidConfig, NotFoundError(std::string("pkey ") + buf +
                                                     " is not in the PKey table of " + where));
      }
    }
  }
  return Status::Ok();
}

StatusOr<bool> Invocation::DeviceVisibleIn(const Netns* ns, const std::string& dev) {
  RDMAK8S_ASSIGN_OR_RETURN(auto nl, RdmaIn(ns));
  RDMAK8S_ASSIGN_OR_RETURN(auto devs, nl->ListDevices());
  return std::any_of(devs.begin(), devs.end(), [&](const RdmaLinkInfo& d) { return d.name == dev; });
}

Status Invocation::WithDeviceSysfs(const AttachmentRecord& rec, const Netns* pod,
                                   const std::function<Status(const std::string&)>& fn) {
  // In exclusive mode the device of a live attachment is in the pod, whoever moved it there.
  if ((rec.moved || rec.netns_mode == "exclusive") && pod != nullptr) return InPodSysfs(*pod, fn);
  return fn(sysfs_root_);
}

Status Invocation::CheckKnobConflicts(const AttachmentRecord& rec) {
  if (rec.knobs.empty()) return Status::Ok();
  auto others = store_.List();
  if (!others.ok()) return Fail(kErrState, others.status().Prepend("read other attachments"));
  for (const auto& [id, value] : rec.knobs) {
    for (const auto& o : *others) {
      if (o.Key() == rec.Key()) continue;
      auto it = o.knobs.find(id);
      if (it != o.knobs.end() && it->second != value) {
        return Fail(kErrQos, FailedPreconditionError(
                                 "qos: " + rec.Key() + " needs " + id + " = " + value +
                                 ", but live attachment " + o.Key() + " needs " + it->second));
      }
    }
  }
  return Status::Ok();
}

Status Invocation::ApplyKnobs(AttachmentRecord* rec, DcbNetlink* dcb, const Netns* pod) {
  if (rec->knobs.empty()) return Status::Ok();
  // Knobs of the RDMA device (tc's sysfs attribute) are read where the device shows now.
  auto with_ctx = [&](const std::string& id, const std::function<Status(const KnobContext&)>& fn) {
    if (IsNodeWideKnob(id)) return fn(KnobContext{dcb, sysfs_root_, sysfs_root_, configfs_root_});
    return WithDeviceSysfs(*rec, pod, [&](const std::string& root) -> Status {
      return fn(KnobContext{dcb, sysfs_root_, root, configfs_root_});
    });
  };
  std::map<std::string, std::string> keep;
  std::map<std::string, std::string> to_change;  // id -> current value
  for (const auto& [id, value] : rec->knobs) {
    StatusOr<std::string> cur = std::string();
    if (Status s = with_ctx(id, [&](const KnobContext& ctx) {
          cur = ReadKnob(ctx, id);
          return Status::Ok();
        });
        !s.ok()) {
      return Fail(kErrQos, s.Prepend("qos: read " + id));
    }
    if (!cur.ok() && cur.status().code() == StatusCode::kUnimplemented) {
      if (conf_.qos.strict) {
        return Fail(kErrQos, cur.status().Prepend("qos (strict): " + id + " unsupported"));
      }
      log_.Warning("qos: " + id + " unsupported, skipped: " + cur.status().message());
      continue;
    }
    if (!cur.ok()) return Fail(kErrQos, cur.status().Prepend("qos: read " + id));
    keep[id] = value;
    if (*cur == value) {
      log_.Info("qos: " + id + " = " + value + " already in place");
    } else {
      to_change[id] = *cur;
    }
  }
  if (!to_change.empty()) {
    // Write-ahead, once for all knobs: the originals are on disk before any knob changes, so a
    // crash can restore them.
    auto originals = store_.LoadKnobs();
    if (!originals.ok()) return Fail(kErrState, originals.status());
    bool changed = false;
    for (const auto& [id, cur] : to_change) {
      auto it = originals->find(id);
      if (it == originals->end() || !it->second.left_as.empty()) {
        // New, or left to an admin earlier: what is there now is the original.
        (*originals)[id] = SavedKnob{cur, keep[id], ""};
        changed = true;
      } else if (it->second.applied != keep[id]) {  // an unrestored one: its original stands
        it->second.applied = keep[id];
        changed = true;
      }
    }
    if (changed) {
      if (Status s = store_.SaveKnobs(*originals); !s.ok()) return Fail(kErrState, s);
    }
    for (const auto& [id, cur] : to_change) {
      Status s = with_ctx(id, [&](const KnobContext& ctx) { return WriteKnob(ctx, id, keep[id]); });
      if (!s.ok()) return Fail(kErrQos, s.Prepend("qos"));
      log_.Info("qos: " + id + " = " + keep[id] + " applied (was " + cur + ")");
    }
  }
  rec->knobs = std::move(keep);
  return Status::Ok();
}

Status Invocation::EnsureIpv6(const Netns& pod) {
  // /proc/sys/net resolves against the writing thread's netns.
  return RunInNetns(pod, [&]() -> Status {
    const std::string path = "/proc/sys/net/ipv6/conf/" + env_.ifname + "/disable_ipv6";
    std::ofstream f(path);
    if (!f) return ErrnoError(errno, "open " + path);
    f << "0\n";
    f.flush();
    if (!f) return InternalError("write 0 to " + path);
    return Status::Ok();
  });
}

Status Invocation::CheckGids(const AttachmentRecord& rec, const Netns& pod,
                             const std::vector<uint32_t>& ports, int timeout_ms, bool report) {
  auto route = RouteIn(&pod);
  if (!route.ok()) return Fail(kErrIo, route.status().Prepend("open rtnetlink in the pod"));
  auto link = (*route)->GetLinkByName(env_.ifname);
  if (!link.ok()) return Fail(kErrWiring, link.status().Prepend("pod interface for GIDs"));
  auto addrs = (*route)->ListAddresses(link->ifindex);
  if (!addrs.ok()) return Fail(kErrIo, addrs.status().Prepend("addresses of pod interface " + env_.ifname));
  std::map<std::string, std::string> wanted;  // gid -> ip
  for (const auto& a : *addrs) {
    std::string gid = GidForIp(a.address);
    if (!gid.empty()) wanted[gid] = a.address;
  }
  if (wanted.empty()) {
    log_.Warning("pod interface " + env_.ifname + " has no IP: no GID to wait for");
    return Status::Ok();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::map<std::string, std::pair<uint32_t, uint32_t>> found;  // gid -> (port, GID index)
    Status s = WithDeviceSysfs(rec, &pod, [&](const std::string& root) -> Status {
      RdmaSysfs sys(root);
      for (auto port : ports) {
        std::set<std::string> rest;
        for (const auto& [gid, ip] : wanted) {
          if (!found.count(gid)) rest.insert(gid);
        }
        if (rest.empty()) break;
        RDMAK8S_ASSIGN_OR_RETURN(auto hits, sys.FindGids(rec.rdma_dev, port, rest, "RoCE v2"));
        for (const auto& [gid, index] : hits) found[gid] = {port, index};
      }
      return Status::Ok();
    });
    if (!s.ok()) return Fail(kErrIo, s.Prepend("read GID table of " + rec.rdma_dev));
    std::vector<std::string> missing;
    for (const auto& [gid, ip] : wanted) {
      if (!found.count(gid)) missing.push_back(gid + " (" + ip + ")");
    }
    if (missing.empty()) {
      // The index a RoCE application passes as its GID index (ibv_modify_qp's sgid_index,
      // NCCL_IB_GID_INDEX, perftest -x): it varies per pod, so the log says which it is.
      for (const auto& [gid, where] : found) {
        if (report) {
          log_.Info("RoCE v2 GID index " + std::to_string(where.second) + " for " + wanted[gid] +
                    " on " + rec.rdma_dev + " port " + std::to_string(where.first));
        }
      }
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Fail(kErrGidMissing,
                  DeadlineExceededError("RoCE v2 GID " + Join(missing) + " not in the GID table of " +
                                        rec.rdma_dev + " after " + std::to_string(timeout_ms) + " ms"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(o_.gid_poll_interval_ms));
  }
}

Status Invocation::RestoreUnneededKnobs(const std::string& leaving,
                                        std::vector<std::string>* pending,
                                        const std::string& in_pod_dev,
                                        const std::string& in_pod_root) {
  auto originals = store_.LoadKnobs();
  if (!originals.ok()) return Fail(kErrState, originals.status());
  if (originals->empty()) return Status::Ok();
  auto others = store_.List();
  if (!others.ok()) return Fail(kErrState, others.status());
  std::unique_ptr<DcbNetlink> dcb;
  Status dcb_error;
  bool dcb_tried = false;
  bool changed = false;
  for (auto it = originals->begin(); it != originals->end();) {
    const std::string& id = it->first;
    SavedKnob& saved = it->second;
    const std::string& orig = saved.original;
    if (!saved.left_as.empty()) {  // decided earlier: the admin's value stays
      ++it;
      continue;
    }
    bool needed = std::any_of(others->begin(), others->end(), [&](const AttachmentRecord& o) {
      return o.Key() != leaving && o.knobs.count(id);
    });
    if (needed) {  // the last attachment needing it restores it
      ++it;
      continue;
    }
    if (IsDcbKnob(id) && !dcb_tried) {
      dcb_tried = true;
      if (auto d = Dcb(); d.ok()) {
        dcb = std::move(*d);
      } else {
        dcb_error = d.status().Prepend("open DCB netlink");
      }
    }
    // Without a DCB handle a DCB knob is NOT restored: WriteKnob's "unsupported" is no success.
    const bool in_pod = !in_pod_dev.empty() && id.rfind("tc:" + in_pod_dev + ":", 0) == 0;
    KnobContext ctx{dcb.get(), sysfs_root_, in_pod ? in_pod_root : sysfs_root_, configfs_root_};
    StatusOr<std::string> now = IsDcbKnob(id) && dcb == nullptr ? StatusOr<std::string>(dcb_error)
                                                                : ReadKnob(ctx, id);
    Status s = now.status();
    if (now.ok() && *now != orig) {
      // Changed since we set it (applied unknown: records of older releases): someone decided
      // otherwise, and restoring would undo their change, not ours.
      if (!saved.applied.empty() && *now != saved.applied) {
        log_.Warning("qos: " + id + " is " + *now + " now, not " + saved.applied +
                     " as we set it: changed since by someone else, left as it is (our original " +
                     orig + " stays on record in " + store_.dir() + "/knobs.json)");
        saved.left_as = *now;
        changed = true;
        ++it;
        continue;
      }
      s = WriteKnob(ctx, id, orig);
    }
    if (!s.ok()) {
      pending->push_back(id + " (original " + orig + "): " + s.message());
      ++it;
      continue;
    }
    log_.Info("qos: " + id + " restored to " + orig);
    it = originals->erase(it);
    changed = true;
  }
  if (changed) {
    if (Status s = store_.SaveKnobs(*originals); !s.ok()) return Fail(kErrState, s);
  }
  return Status::Ok();
}

Status Invocation::RetryUnrestoredKnobs() {
  std::vector<std::string> pending;
  RDMAK8S_RETURN_IF_ERROR(RestoreUnneededKnobs("", &pending));
  if (!pending.empty()) log_.Error("qos: still NOT restored: " + Join(pending, "; "));
  return Status::Ok();
}

Status Invocation::Release(const AttachmentRecord& rec) {
  auto host = CurrentNetns();
  if (!host.ok()) return Fail(kErrIo, host.status());
  std::optional<AttachmentRecord> heir;
  if (rec.moved) {
    // Another live attachment of the same pod over the same device keeps it there, and takes
    // over bringing it home.
    auto others = store_.List();
    if (!others.ok()) return Fail(kErrState, others.status().Prepend("read other attachments"));
    if (const AttachmentRecord* o = OtherHolder(*others, rec)) heir = *o;
  }
  if (heir) {
    heir->moved = true;
    if (Status s = store_.Save(*heir); !s.ok()) return Fail(kErrState, s);
    log_.Info(rec.rdma_dev + " stays in the pod for " + heir->Key());
  } else if (rec.moved) {
    auto pod = rec.netns.empty() ? StatusOr<Netns>(NotFoundError("no netns recorded"))
                                 : OpenNetns(rec.netns);
    if (!pod.ok()) {
      // The kernel returns RDMA devices to init_net when their netns dies (rdma_dev_exit_net).
      log_.Info("pod netns of " + rec.Key() + " is gone (" + pod.status().message() + "): " +
                rec.rdma_dev + " went home with it");
    } else {
      if (!o_.new_rdma_netlink) return Fail(kErrWiring, UnimplementedError("no RDMA netlink in this build"));
      // Both the presence check and the move run with THIS THREAD inside the pod's netns, as
      // `ip netns exec POD rdma dev set DEV netns NODE` does. The kernel looks the device up
      // twice: nldev_set_doit finds it by index in the socket's netns (sock_net), then
      // ib_device_set_netns_put hands current->nsproxy->net_ns (the calling task's netns) to
      // rdma_dev_change_netns (drivers/infiniband/core/device.c), which answers -ENODEV unless
      // the device is in that netns. A socket opened in the pod but driven from the node's netns
      // therefore always gets ENODEV: that used to be read as "already home" and left the device
      // in the pod. "Already home" is now decided only by the pod's own device list.
      bool in_pod = false;
      Status s = RunInNetns(*pod, [&]() -> Status {
        RDMAK8S_ASSIGN_OR_RETURN(auto nl, o_.new_rdma_netlink());
        RDMAK8S_ASSIGN_OR_RETURN(auto devs, nl->ListDevices());
        in_pod = std::any_of(devs.begin(), devs.end(),
                             [&](const RdmaLinkInfo& d) { return d.name == rec.rdma_dev; });
        if (!in_pod) return Status::Ok();
        return nl->MoveToNetns(rec.rdma_dev, host->fd());
      });
      if (!s.ok()) return Fail(kErrWiring, s.Prepend("return " + rec.rdma_dev + " to the node"));
      if (in_pod) {
        log_.Info("moved " + rec.rdma_dev + " back to the node's netns");
      } else {
        log_.Info(rec.rdma_dev + " is not in the pod netns any more: already home");
      }
    }
  }
  // Knobs: a node-wide knob or one of the device whose restore fails keeps its original in
  // knobs.json, and every later DEL/GC on the node tries again (RestoreUnneededKnobs). The
  // attachment itself is released all the same: failing DEL for a knob the node may never let us
  // write again (DCB netlink gone, driver without dcbnl) would keep the pod from ever being torn
  // down, while the original, which is what matters, is not lost.
  std::vector<std::string> pending;
  std::optional<Netns> heir_pod;
  if (heir && !heir->netns.empty()) {
    if (auto p = OpenNetns(heir->netns); p.ok()) heir_pod = std::move(*p);
  }
  if (heir_pod) {
    // The device stays in the pod, where the node's sysfs no longer shows it: its knobs that the
    // heir doesn't need are restored in the pod's view.
    bool ran = false;
    Status restore = Status::Ok();
    Status view = WithDeviceSysfs(*heir, &*heir_pod, [&](const std::string& root) {
      ran = true;
      restore = RestoreUnneededKnobs(rec.Key(), &pending, rec.rdma_dev, root);
      return Status::Ok();
    });
    RDMAK8S_RETURN_IF_ERROR(restore);
    if (!ran) {  // no view of the pod: what needs it stays on record for a later DEL or GC
      log_.Warning("qos: no sysfs view of " + heir->netns + " (" + view.message() + ")");
      RDMAK8S_RETURN_IF_ERROR(RestoreUnneededKnobs(rec.Key(), &pending));
    }
  } else {
    RDMAK8S_RETURN_IF_ERROR(RestoreUnneededKnobs(rec.Key(), &pending));
  }
  if (!pending.empty()) {
    log_.Error("qos: NOT restored: " + Join(pending, "; ") + ". The originals stay in " +
               store_.dir() + "/knobs.json; the next DEL or GC on this node retries");
  }
  if (Status s = store_.Remove(rec.network, rec.container_id, rec.ifname); !s.ok()) {
    return Fail(kErrState, s);
  }
  return Status::Ok();
}

Status Invocation::Add(json* result) {
  if (!conf_.prev_result) {
    return Fail(kErrInvalidConfig,
                InvalidArgumentError("rdmak8s is a chained plugin: ADD needs a prevResult "
                                     "(put it after the plugin that creates " + env_.ifname + ")"));
  }
  CniError cerr;
  auto converted = ConvertResult(*conf_.prev_result, conf_.cni_version, &cerr);
  if (!converted) return Fail(cerr.code, InvalidArgumentError(cerr.msg));

  auto pod = OpenNetns(env_.netns);
  if (!pod.ok()) {
    return Fail(pod.status().code() == StatusCode::kNotFound ? kErrUnknownContainer : kErrInvalidEnv,
                pod.status().Prepend("CNI_NETNS"));
  }
  // Checked before the state dir is touched: a node without RDMA is left exactly as it was.
  const std::string ib = sysfs_root_ + "/class/infiniband";
  if (access(ib.c_str(), F_OK) != 0) {
    return Fail(kErrDeviceNotFound,
                ErrnoError(errno, "no RDMA on this node (no RDMA core loaded: " + ib + ")"));
  }
  std::optional<StateStore::Lock> lock;
  if (auto l = store_.Acquire(); l.ok()) {
    lock.emplace(std::move(*l));
  } else {
    return Fail(kErrState, l.status());
  }

  std::string dev_name;
  uint32_t resolved_port = 0;
  bool in_pod = false;
  RDMAK8S_RETURN_IF_ERROR(ResolveDevice(*pod, &dev_name, &resolved_port, &in_pod));
  // Read the device where it shows: the pod's view once it is in the pod (a re-ADD).
  std::optional<RdmaSysfs> pod_sysfs;
  if (in_pod) {
    auto root = PodSysfsRoot(*pod);
    if (!root.ok()) return Fail(kErrDeviceNotFound, root.status().Prepend("the pod's sysfs"));
    pod_sysfs.emplace(*root);
  }
  const RdmaSysfs& dev_sysfs = in_pod ? *pod_sysfs : host_sysfs_;
  auto dev = dev_sysfs.ReadDevice(dev_name);
  if (!dev.ok()) return Fail(kErrDeviceNotFound, dev.status().Prepend("read RDMA device"));
  const std::vector<uint32_t> ports = PortsOf(*dev, resolved_port);
  RDMAK8S_RETURN_IF_ERROR(CheckUsable(dev_sysfs, *dev, ports));

  auto host_nl = RdmaIn(nullptr);
  if (!host_nl.ok()) return Fail(kErrWiring, host_nl.status().Prepend("open RDMA netlink"));
  auto mode = (*host_nl)->GetNetnsMode();
  if (!mode.ok()) return Fail(kErrWiring, mode.status().Prepend("read RDMA netns mode"));
  const std::string mode_name(RdmaNetnsModeName(*mode));
  if (!conf_.netns_mode.empty() && conf_.netns_mode != mode_name) {
    return Fail(kErrWiring, FailedPreconditionError("netconf wants RDMA netns mode " +
                                                    conf_.netns_mode + ", the kernel is in " +
                                                    mode_name + " mode"));
  }

  AttachmentRecord rec;
  rec.network = conf_.name;
  rec.container_id = env_.container_id;
  rec.ifname = env_.ifname;
  rec.netns = env_.netns;
  rec.cni_version = conf_.cni_version;
  rec.rdma_dev = dev_name;
  rec.transport = std::string(TransportName(dev->transport));
  rec.netns_mode = mode_name;
  rec.ports = ports;
  log_.Info("device " + dev_name + " (" + rec.transport + ", " + mode_name + " mode)");

  bool need_move = false;
  if (*mode == RdmaNetnsMode::kExclusive) {
    auto here = DeviceVisibleIn(nullptr, dev_name);
    if (!here.ok()) return Fail(kErrWiring, here.status().Prepend("list RDMA devices"));
    if (*here) {
      need_move = true;
    } else {
      auto there = DeviceVisibleIn(&*pod, dev_name);
      if (!there.ok()) return Fail(kErrWiring, there.status().Prepend("list RDMA devices in the pod"));
      if (!*there) {
        return Fail(kErrWiring,
                    FailedPreconditionError("RDMA device " + dev_name +
                                            " is not in the node's netns (held by another pod?)"));
      }
      // In the pod already: an earlier ADD of this attachment moved it (it owns the move), or
      // another attachment of this pod over the same device did (that one brings it home).
      auto others = store_.List();
      if (!others.ok()) return Fail(kErrState, others.status().Prepend("read other attachments"));
      auto own = std::find_if(others->begin(), others->end(),
                              [&](const AttachmentRecord& o) { return o.Key() == rec.Key(); });
      const bool mine = own != others->end() && own->rdma_dev == dev_name &&
                        own->netns == env_.netns && own->moved;
      rec.moved = mine || OtherHolder(*others, rec) == nullptr;
      if (!rec.moved) log_.Info(dev_name + " is already in the pod for another attachment");
    }
  }

  std::unique_ptr<DcbNetlink> dcb;
  if (dev->transport == Transport::kRoce && !conf_.qos.empty()) {
    std::string pf;
    if (auto p = host_sysfs_.PfNetdev(*dev); p.ok()) {
      pf = *p;
    } else {
      log_.Warning("qos: no PF netdev for " + dev_name + ": " + p.status().message());
    }
    rec.pf_netdev = pf;
    rec.knobs = RequiredKnobs(conf_.qos, pf, dev_name, ports);
    // Failing to open DCB netlink is no "knob unsupported by this driver" (that shows when a
    // knob is read): it is an error, strict or not.
    auto dcb_knob = std::find_if(rec.knobs.begin(), rec.knobs.end(),
                                 [](const auto& k) { return IsDcbKnob(k.first); });
    if (dcb_knob != rec.knobs.end()) {
      auto d = Dcb();
      if (!d.ok()) {
        return Fail(kErrQos, d.status().Prepend("qos: open DCB netlink for " + dcb_knob->first));
      }
      dcb = std::move(*d);
    }
  } else if (!conf_.qos.empty()) {
    log_.Info("qos: ignored for " + rec.transport + " device " + dev_name +
              " (lossless settings are for RoCE)");
  }

  // Refuse a QoS conflict before anything is written or moved.
  RDMAK8S_RETURN_IF_ERROR(CheckKnobConflicts(rec));

  // Write-ahead record: from here on a crash leaves enough on disk for DEL/GC to undo.
  if (need_move) rec.moved = true;
  if (Status s = store_.Save(rec); !s.ok()) return Fail(kErrState, s);
  auto rollback = [&](Status cause) -> Status {
    int code = code_;
    log_.Error("ADD failed, rolling back: " + cause.message());
    Status r = Release(rec);
    if (!r.ok()) log_.Error("rollback incomplete: " + r.message());
    code_ = code;
    return cause;
  };

  if (need_move) {
    if (Status s = (*host_nl)->MoveToNetns(dev_name, pod->fd()); !s.ok()) {
      // The record says moved (write-ahead); Release finds it not in the pod and calls it home.
      return rollback(Fail(kErrWiring, s.Prepend("move RDMA device into the pod")));
    }
    log_.Info("moved " + dev_name + " into netns " + env_.netns);
  } else {
    auto visible = DeviceVisibleIn(&*pod, dev_name);
    if (!visible.ok()) return rollback(Fail(kErrWiring, visible.status().Prepend("RDMA netlink in the pod")));
    if (!*visible) {
      return rollback(Fail(kErrWiring, FailedPreconditionError("RDMA device " + dev_name +
                                                               " is not visible from the pod")));
    }
  }

  // QoS after the move. Moving an RDMA device to another netns in exclusive mode unregisters
  // and re-registers it (rdma_dev_change_netns in drivers/infiniband/core/device.c:
  // disable_device ... enable_device_and_get), so every ib_client drops its per-device state and
  // makes a fresh one: rdma_cm's cma_remove_one/cma_add_one reset default_roce_tos to 0. The
  // rdma_cm configfs group (drivers/infiniband/core/cma_configfs.c) is not per-netns and finds
  // its cma_device by name on each access, so a write made now, from the node's netns, lands on
  // the re-registered device and stays; one made before the move was lost (CHECK then answered
  // 103). Node-wide knobs (DCB, ECN of the PF netdev) do not care, and go with them for one
  // write-ahead of originals and one rollback path.
  const size_t planned_knobs = rec.knobs.size();
  if (Status s = ApplyKnobs(&rec, dcb.get(), &*pod); !s.ok()) return rollback(s);
  // Unsupported knobs were dropped: record that (each save costs an fsync, so only then).
  if (rec.knobs.size() != planned_knobs) {
    if (Status s = store_.Save(rec); !s.ok()) return rollback(Fail(kErrState, s));
  }

  if (conf_.ensure_ipv6_gid) {
    if (Status s = EnsureIpv6(*pod); !s.ok()) return rollback(Fail(kErrIo, s.Prepend("ensureIPv6Gid")));
  }
  if (dev->transport == Transport::kRoce) {
    // Wait for the GIDs WITHOUT the node-wide lock: one pod whose GID never shows must not stall
    // every ADD/DEL/GC on the node for gidTimeoutMs. The record is on disk, so meanwhile other
    // invocations see this attachment as live (its device, its knobs); a DEL or GC may even
    // release it, which is why it is read back under the lock before deciding.
    lock.reset();
    Status waited = CheckGids(rec, *pod, ports, conf_.gid_timeout_ms, /*report=*/true);
    const int wait_code = code_;
    auto relock = store_.Acquire();
    if (!relock.ok()) {  // no rollback without the lock: the record stays for DEL/GC
      return Fail(kErrState, relock.status().Prepend("re-take the state lock after the GID wait"));
    }
    lock.emplace(std::move(*relock));
    auto now = store_.Load(rec.network, rec.container_id, rec.ifname);
    if (!now.ok()) {
      if (now.status().code() == StatusCode::kNotFound) {
        return Fail(kErrWiring, FailedPreconditionError(
                                    "attachment " + rec.Key() + " was released by a concurrent "
                                    "DEL or GC while ADD waited for its GIDs"));
      }
      return rollback(Fail(kErrState, now.status()));
    }
    rec = std::move(*now);  // (a Release of another attachment may have handed it the move)
    if (!waited.ok()) {
      code_ = wait_code;
      return rollback(waited);
    }
  }

  // SPEC.md 1.1.0 lets a plugin fill in pciID of the interface it wired.
  if (CompareVersions(conf_.cni_version, "1.1.0") >= 0 && dev->parent.find(':') != std::string::npos &&
      converted->contains("interfaces")) {
    for (auto& i : (*converted)["interfaces"]) {
      if (i.value("name", "") == env_.ifname && !i.value("sandbox", "").empty() &&
          !i.contains("pciID")) {
        i["pciID"] = dev->parent;
      }
    }
  }
  *result = std::move(*converted);
  return Status::Ok();
}

Status Invocation::Del() {
  if (access(store_.dir().c_str(), F_OK) != 0 && errno == ENOENT) {
    log_.Info("no state dir " + store_.dir() + ": nothing was attached here");
    return Status::Ok();  // and don't create one: a DEL after a failed ADD leaves no trace
  }
  auto lock = store_.Acquire();
  if (!lock.ok()) return Fail(kErrState, lock.status());
  auto rec = store_.Load(conf_.name, env_.container_id, env_.ifname);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) {
      log_.Info("no attachment recorded: nothing to undo");
      // A retried DEL also retries knobs an earlier release could not restore.
      if (Status s = RetryUnrestoredKnobs(); !s.ok()) {
        log_.Warning("qos: retry of unrestored knobs: " + s.message());
      }
      return Status::Ok();
    }
    return Fail(kErrState, rec.status());
  }
  return Release(*rec);
}

Status Invocation::Check() {
  if (!conf_.prev_result) {
    return Fail(kErrInvalidConfig, InvalidArgumentError("CHECK needs a prevResult"));
  }
  CniError cerr;
  if (!ConvertResult(*conf_.prev_result, conf_.cni_version, &cerr)) {
    return Fail(cerr.code, InvalidArgumentError(cerr.msg));
  }
  auto pod = OpenNetns(env_.netns);
  if (!pod.ok()) return Fail(kErrUnknownContainer, pod.status().Prepend("CNI_NETNS"));
  auto lock = store_.Acquire();
  if (!lock.ok()) return Fail(kErrState, lock.status());
  auto rec = store_.Load(conf_.name, env_.container_id, env_.ifname);
  if (!rec.ok()) {
    return Fail(rec.status().code() == StatusCode::kNotFound ? kErrWiring : kErrState,
                rec.status().Prepend("no record of this attachment"));
  }
  // The device is where it should be.
  auto visible = DeviceVisibleIn(&*pod, rec->rdma_dev);
  if (!visible.ok()) return Fail(kErrWiring, visible.status());
  if (!*visible) {
    return Fail(kErrWiring, FailedPreconditionError("RDMA device " + rec->rdma_dev +
                                                    " is not visible in the pod's netns"));
  }
  if (rec->moved || rec->netns_mode == "exclusive") {
    auto home = DeviceVisibleIn(nullptr, rec->rdma_dev);
    if (home.ok() && *home) {
      return Fail(kErrWiring, FailedPreconditionError("RDMA device " + rec->rdma_dev +
                                                      " is back in the node's netns"));
    }
  }
  // The ports ADD chose (older records: as ADD would choose now); IB ports read where the
  // device shows now, the pod's view once it moved.
  std::vector<uint32_t> ports = rec->ports;
  code_ = kErrWiring;
  Status s = WithDeviceSysfs(*rec, &*pod, [&](const std::string& root) -> Status {
    RdmaSysfs sys(root);
    auto dev = sys.ReadDevice(rec->rdma_dev);
    if (!dev.ok()) return Fail(kErrWiring, dev.status().Prepend("read RDMA device"));
    if (ports.empty()) ports = PortsOf(*dev, 0);
    if (rec->transport == "ib") return CheckUsable(sys, *dev, ports);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (rec->transport == "roce") RDMAK8S_RETURN_IF_ERROR(CheckGids(*rec, *pod, ports, 0, false));
  std::unique_ptr<DcbNetlink> dcb;
  if (auto d = Dcb(); d.ok()) dcb = std::move(*d);
  for (const auto& [id, value] : rec->knobs) {
    StatusOr<std::string> cur = std::string();
    Status rs = WithDeviceSysfs(*rec, &*pod, [&](const std::string& root) -> Status {
      KnobContext ctx{dcb.get(), sysfs_root_, root, configfs_root_};
      cur = ReadKnob(ctx, id);
      return Status::Ok();
    });
    if (!rs.ok()) return Fail(kErrIo, rs);
    if (!cur.ok()) return Fail(kErrQos, cur.status().Prepend("qos: read " + id));
    if (*cur != value) {
      return Fail(kErrQos, FailedPreconditionError("qos: " + id + " is " + *cur + ", want " + value));
    }
  }
  return Status::Ok();
}

Status Invocation::Gc() {
  if (access(store_.dir().c_str(), F_OK) != 0 && errno == ENOENT) return Status::Ok();
  auto lock = store_.Acquire();
  if (!lock.ok()) return Fail(kErrState, lock.status());
  auto recs = store_.List(conf_.name);
  if (!recs.ok()) return Fail(kErrState, recs.status());
  std::set<std::pair<std::string, std::string>> valid;
  for (const auto& a : conf_.valid_attachments) valid.insert({a.container_id, a.ifname});
  Status first;
  int first_code = 0;
  bool released = false;
  for (const auto& rec : *recs) {
    if (valid.count({rec.container_id, rec.ifname})) continue;
    log_.Info("GC: releasing stale attachment " + rec.Key());
    released = true;
    if (Status s = Release(rec); !s.ok() && first.ok()) {
      first = s.Prepend("GC " + rec.Key());
      first_code = code_;
    }
  }
  if (!released) {  // (each Release already retried them)
    if (Status s = RetryUnrestoredKnobs(); !s.ok() && first.ok()) {
      first = s.Prepend("GC: knobs left unrestored earlier");
      first_code = code_;
    }
  }
  if (!first.ok()) return Fail(first_code, first);
  return Status::Ok();
}

Status Invocation::StatusCmd() {
  const std::string ib = sysfs_root_ + "/class/infiniband";
  if (access(ib.c_str(), F_OK) != 0) {
    return Fail(kErrPluginNotAvailable,
                ErrnoError(errno, "RDMA unavailable: no RDMA core (" + ib + ")"));
  }
  auto nl = RdmaIn(nullptr);
  if (!nl.ok()) return Fail(kErrPluginNotAvailable, nl.status().Prepend("RDMA netlink unavailable"));
  auto mode = (*nl)->GetNetnsMode();
  if (!mode.ok()) return Fail(kErrPluginNotAvailable, mode.status().Prepend("read RDMA netns mode"));
  if (!conf_.netns_mode.empty() && conf_.netns_mode != RdmaNetnsModeName(*mode)) {
    return Fail(kErrPluginNotAvailable,
                FailedPreconditionError("netconf wants RDMA netns mode " + conf_.netns_mode +
                                        ", the kernel is in " +
                                        std::string(RdmaNetnsModeName(*mode)) + " mode"));
  }
  if (!conf_.device_id.empty()) {
    auto r = host_sysfs_.ResolveDeviceId(conf_.device_id);
    // In exclusive mode a device in a pod is hidden from the node's sysfs, not gone.
    if (!r.ok() && (r.status().code() != StatusCode::kNotFound ||
                    !host_sysfs_.ResolveHiddenDeviceId(conf_.device_id).ok())) {
      return Fail(kErrPluginNotAvailable, r.status());
    }
  }
  return Status::Ok();
}

PluginOutput Run(const PluginOptions& options, const std::function<const char*(const char*)>& getenv,
                 std::string_view stdin_data) {
  Logger log;
  log.Configure(LogLevel::kInfo, "", options.stderr_fd);
  CniError err;
  const std::string peeked = PeekCniVersion(stdin_data);
  const std::string err_version = IsSupportedVersion(peeked) ? peeked : std::string(kLatestVersion);
  auto env = ParseEnv(getenv, &err);
  if (!env) {
    log.Error(err.msg);
    return {1, ErrorJson(err, err_version)};
  }
  // Host paths and the log destination are the node's: from its configuration file, never from
  // the netconf (a NAD is written by namespace users) unless that file allows it.
  NodeConfig node = options.node;
  if (!options.node_config_path.empty()) {
    auto loaded = LoadNodeConfig(options.node_config_path, options.node);
    if (!loaded.ok()) {
      CniError e{loaded.status().code() == StatusCode::kInvalidArgument ||
                         loaded.status().code() == StatusCode::kFailedPrecondition
                     ? kErrInvalidConfig
                     : kErrIo,
                 loaded.status().message(), ""};
      log.Error(e.msg);
      return {1, ErrorJson(e, err_version)};
    }
    node = std::move(*loaded);
  }
  // (after the node configuration: the installer's VERSION check then also checks that file)
  if (env->command == Command::kVersion) return {0, VersionJson(err_version)};
  log.Configure(node.log_level, node.log_file, options.stderr_fd);
  auto conf = ParseNetConf(stdin_data, env->command, &err);
  if (!conf) {
    log.Error(err.msg);
    return {1, ErrorJson(err, err_version)};
  }
  NodeConfig paths = node;
  bool sysfs_as_is = false;
  if (auto keys = NetconfHostPathKeys(*conf); !keys.empty()) {
    const std::string where = options.node_config_path.empty() ? std::string("the node configuration")
                                                               : options.node_config_path;
    if (node.allow_netconf_overrides) {
      if (!conf->sysfs_root.empty()) {
        sysfs_as_is = !SameDir(conf->sysfs_root, node.sysfs_root);  // the node's own value changes nothing
        paths.sysfs_root = conf->sysfs_root;
      }
      if (!conf->configfs_root.empty()) paths.configfs_root = conf->configfs_root;
      if (!conf->state_dir.empty()) paths.state_dir = conf->state_dir;
      if (!conf->log_file.empty()) paths.log_file = conf->log_file;
    } else if (env->command == Command::kDel) {
      // DEL must still clean up what ADD did, and ADD never ran with these paths here (it refuses
      // them): undo from the node's state dir, write nothing where the netconf says.
      log.Warning("netconf sets " + Join(keys) + ", host paths that are the node's: ignored, DEL " +
                  "uses the node's (" + where + " does not allow netconf overrides)");
    } else {
      std::vector<std::string> quoted;
      for (const auto& k : keys) quoted.push_back("\"" + k + "\"");
      CniError e{kErrInvalidConfig,
                 std::string(keys.size() == 1 ? "netconf key " : "netconf keys ") + Join(quoted) +
                     (keys.size() == 1 ? " is" : " are") + " not allowed: host paths and the log file " +
                     "(sysfsRoot, configfsRoot, stateDir, logFile) are the node's, set in " + where +
                     ", which does not allow netconf overrides (allowNetconfOverrides)",
                 ""};
      log.Error(e.msg);
      return {1, ErrorJson(e, err_version)};
    }
  }
  log.Configure(conf->log_level.value_or(node.log_level), paths.log_file, options.stderr_fd);
  log.SetContext(std::string(CommandName(env->command)) + " " + conf->name +
                 (env->container_id.empty() ? "" : " " + env->container_id + "/" + env->ifname));
  auto too_old = [&](std::string_view min) {
    CniError e{kErrIncompatibleVersion,
               "config version " + conf->cni_version + " does not allow " +
                   std::string(CommandName(env->command)) + " (needs " + std::string(min) + "+)",
               ""};
    log.Error(e.msg);
    return PluginOutput{1, ErrorJson(e, conf->cni_version)};
  };
  if (env->command == Command::kCheck && CompareVersions(conf->cni_version, "0.4.0") < 0) {
    return too_old("0.4.0");
  }
  if ((env->command == Command::kGc || env->command == Command::kStatus) &&
      CompareVersions(conf->cni_version, "1.1.0") < 0) {
    return too_old("1.1.0");
  }
  Invocation inv(options, *env, *conf, paths, sysfs_as_is, log);
  json result;
  Status s;
  switch (env->command) {
    case Command::kAdd: s = inv.Add(&result); break;
    case Command::kDel: s = inv.Del(); break;
    case Command::kCheck: s = inv.Check(); break;
    case Command::kGc: s = inv.Gc(); break;
    case Command::kStatus: s = inv.StatusCmd(); break;
    case Command::kVersion: break;
  }
  if (!s.ok()) {
    log.Error(s.message());
    return {1, ErrorJson({inv.code(), s.message(), std::string(StatusCodeName(s.code()))},
                         conf->cni_version)};
  }
  if (env->command == Command::kAdd) return {0, result.dump()};
  return {0, ""};
}

}  // namespace

PluginOutput RunPlugin(const PluginOptions& options,
                       const std::function<const char*(const char*)>& getenv,
                       std::string_view stdin_data) {
  try {
    return Run(options, getenv, stdin_data);
  } catch (const std::exception& e) {  // a library threw where we did not expect it
    return {1, ErrorJson({kErrIo, std::string("internal error: ") + e.what(), ""}, kLatestVersion)};
  }
}

}  // namespace rdmak8s::cni
