#include "cni/device_resolver.h"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "cni/pod_grant.h"
#include "cni/spec.h"
#include "rdmak8s/device/port_usable.h"

namespace rdmak8s::cni {

DeviceResolver::DeviceResolver(const PluginOptions& options, DeviceSelector selector,
                               std::string sysfs_root, SysfsView* pod_view, Logger& log,
                               FailureCode& failure)
    : o_(options),
      sel_(std::move(selector)),
      sysfs_root_(std::move(sysfs_root)),
      host_sysfs_(sysfs_root_),
      log_(log),
      failure_(failure) {
  if (pod_view != nullptr) {
    view_ = pod_view;
  } else {
    fixed_view_ = std::make_unique<FixedSysfsView>(sysfs_root_);
    view_ = fixed_view_.get();
  }
}

StatusOr<std::string> DeviceResolver::PodSysfsRoot(const Netns& pod) {
  auto it = pod_roots_.find(pod.path());
  if (it == pod_roots_.end()) {
    RDMAK8S_ASSIGN_OR_RETURN(auto root, view_->Open(pod));
    it = pod_roots_.emplace(pod.path(), std::move(root)).first;
  }
  return it->second->path();
}

Status DeviceResolver::InPodSysfs(const Netns& pod, const std::function<Status(const std::string&)>& fn) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string root, PodSysfsRoot(pod));
  return fn(root);
}

std::vector<uint32_t> DeviceResolver::PortsOf(const LookedUpDevice& dev, uint32_t resolved_port) const {
  const uint32_t want = sel_.port != 0 ? sel_.port : resolved_port;
  std::vector<uint32_t> ports, usable;
  for (const auto& p : dev.ports) {
    if (want == 0 || p.port_num == want) ports.push_back(p.port_num);
    // The one port-usable rule (port_usable.h); the netdev's state is not read here (CheckUsable).
    if (PortUnusableReason(dev.transport, p, std::nullopt).empty()) usable.push_back(p.port_num);
  }
  // No port in the netconf and none from the netdev's dev_port (deviceID, a VF parent): an
  // unused port (the DOWN second port of an IB HCA) must not fail the attachment. Use the
  // usable ones; when none is, all of them, and CheckUsable says why each is not.
  if (want == 0 && !usable.empty()) return usable;
  return ports;
}

StatusOr<std::optional<DraChoice>> DeviceResolver::FromDraClaims(std::string* no_claim) {
  auto uid = CniArg(sel_.cni_args, "K8S_POD_UID");
  if (!uid.ok()) {
    if (uid.status().code() != StatusCode::kNotFound) return failure_.Fail(kErrDeviceNotFound, uid.status());
    if (!sel_.dra_request.empty()) {
      return failure_.Fail(kErrDeviceNotFound,
                           InvalidArgumentError("draRequest \"" + sel_.dra_request +
                                                "\" needs the pod's UID, and CNI_ARGS has no K8S_POD_UID"));
    }
    return std::optional<DraChoice>();
  }
  const std::string what = "DRA devices of pod " + *uid + " (K8S_POD_UID)" +
                           (sel_.dra_request.empty() ? "" : ", draRequest \"" + sel_.dra_request + "\"");
  auto records = ReadPodClaimRecords(sel_.pod_devices_dir, *uid);
  if (!records.ok() && records.status().code() != StatusCode::kNotFound) {
    return failure_.Fail(kErrDeviceNotFound, records.status().Prepend(what));
  }
  // Absent: PickDraDevice refuses records it cannot check against the pod's namespace.
  StatusOr<std::string> pod_namespace = CniArg(sel_.cni_args, "K8S_POD_NAMESPACE");
  if (!pod_namespace.ok() && pod_namespace.status().code() != StatusCode::kNotFound) {
    return failure_.Fail(kErrDeviceNotFound, pod_namespace.status().Prepend(what));
  }
  StatusOr<DraChoice> pick =
      records.ok() ? PickDraDevice(*records, *uid, pod_namespace.ok() ? *pod_namespace : "", sel_.dra_request)
                   : StatusOr<DraChoice>(records.status());
  if (pick.ok()) return std::optional<DraChoice>(*pick);
  if (pick.status().code() == StatusCode::kNotFound && sel_.dra_request.empty()) {
    *no_claim = "no deviceID, and no DRA claim of pod " + *uid + " gave a device (" +
                pick.status().message() + ")";
    return std::optional<DraChoice>();
  }
  return failure_.Fail(kErrDeviceNotFound, pick.status().Prepend(what));
}

Status DeviceResolver::ResolveDevice(const Netns& pod, std::string* dev, uint32_t* port, bool* in_pod) {
  *in_pod = false;
  if (!sel_.device_id.empty()) {
    RDMAK8S_RETURN_IF_ERROR(ResolveById(pod, sel_.device_id, dev, in_pod));
    // A NAD is tenant input: its deviceID must name a device this pod was given, never another
    // pod's (checked before anything is moved or written).
    GrantQuery q{sel_.cni_args, sel_.device_id, *dev, sel_.pod_devices_dir, sel_.pod_resources_socket,
                 std::chrono::milliseconds(o_.pod_resources_timeout_ms), nullptr};
    const bool there = *in_pod;
    q.resolve_id = [&](const std::string& id) -> StatusOr<std::string> {
      if (!there) return host_sysfs_.ResolveDeviceId(id);
      RDMAK8S_ASSIGN_OR_RETURN(std::string root, PodSysfsRoot(pod));
      return DeviceLookup(root).ResolveDeviceId(id);
    };
    return CheckPodWasGiven(q, log_, failure_);
  }
  std::string no_claim;
  RDMAK8S_ASSIGN_OR_RETURN(std::optional<DraChoice> dra, FromDraClaims(&no_claim));
  if (dra) {
    log_.Info("no deviceID: RDMA device " + dra->rdma_dev + " of DRA claim " + dra->claim +
              ", request " + dra->request);
    Status s = ResolveById(pod, dra->rdma_dev, dev, in_pod);
    if (!s.ok()) return s.Prepend("DRA claim " + dra->claim + ", request " + dra->request);
    return s;
  }
  Status s = ResolveByIfname(pod, dev, port, in_pod);
  if (!s.ok() && !no_claim.empty() && failure_.code() == kErrDeviceNotFound) return s.Prepend(no_claim);
  return s;
}

Status DeviceResolver::ResolveById(const Netns& pod, const std::string& id, std::string* dev,
                                   bool* in_pod) {
  auto r = host_sysfs_.ResolveDeviceId(id);
  if (r.ok() || r.status().code() != StatusCode::kNotFound) {
    if (!r.ok()) return failure_.Fail(kErrDeviceNotFound, r.status());
    *dev = *r;
    return Status::Ok();
  }
  // Exclusive mode: the node's sysfs no longer shows a device in a pod (class/infiniband is
  // netns tagged). A re-ADD, or another attachment of this pod over the same device, finds it
  // in the pod's view.
  StatusOr<std::string> there = r.status();
  Status s = InPodSysfs(pod, [&](const std::string& root) -> Status {
    there = DeviceLookup(root).ResolveDeviceId(id);
    return Status::Ok();
  });
  if (!s.ok()) return failure_.Fail(kErrDeviceNotFound, s.Prepend("deviceID " + id + ": the pod's sysfs"));
  if (there.ok()) {
    *dev = *there;
    *in_pod = true;
    return Status::Ok();
  }
  if (there.status().code() != StatusCode::kNotFound) return failure_.Fail(kErrDeviceNotFound, there.status());
  // Neither view shows it, but its uverbs char device (not netns tagged) is on the node.
  if (auto hidden = host_sysfs_.ResolveHiddenDeviceId(id); hidden.ok()) {
    return failure_.Fail(
        kErrWiring,
        FailedPreconditionError("RDMA device " + *hidden + " (deviceID " + id +
                                ") is in a network namespace other than the node's and this "
                                "pod's: held by another pod?"));
  }
  return failure_.Fail(kErrDeviceNotFound, r.status());
}

Status DeviceResolver::ResolveByIfname(const Netns& pod, std::string* dev, uint32_t* port, bool* in_pod) {
  const std::string what = "find the RDMA device of pod interface " + sel_.ifname;
  RDMAK8S_ASSIGN_OR_RETURN(LowestNetdev lowest, LowestNetdevOf(pod, what));
  const LinkInfo& netdev = lowest.link;
  const std::string via = what + " via " + netdev.name;
  if (lowest.in_node) {  // a netdev of the node: the node's sysfs shows it and its device
    auto r = host_sysfs_.ResolveByNetdev(netdev.name, port);
    if (!r.ok()) return failure_.Fail(kErrDeviceNotFound, r.status().Prepend(via));
    *dev = *r;
    return Status::Ok();
  }
  if (!netdev.parent_dev.empty()) return ResolveByParentDev(pod, netdev, via, dev, port, in_pod);
  return ResolveByPodNetdev(pod, netdev, what, dev, port, in_pod);
}

StatusOr<DeviceResolver::LowestNetdev> DeviceResolver::LowestNetdevOf(const Netns& pod,
                                                                      const std::string& what) {
  // Follow CNI_IFNAME in the pod to its RDMA device.
  auto route = OpenRouteNetlink(o_, &pod);
  if (!route.ok()) return failure_.Fail(kErrIo, route.status().Prepend("open rtnetlink in the pod"));
  auto link = (*route)->GetLinkByName(sel_.ifname);
  if (!link.ok()) {
    return failure_.Fail(kErrDeviceNotFound,
                         link.status().Prepend("no deviceID, and interface " + sel_.ifname +
                                               " of the pod could not be read"));
  }
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
      return failure_.Fail(kErrDeviceNotFound, NotFoundError(what + ": more than 8 stacked links"));
    }
    if (cur.link_netnsid >= 0) {
      if (ns == nullptr) {
        return failure_.Fail(kErrDeviceNotFound,
                             NotFoundError(what + ": the lower device of " + cur.name +
                                           " is in a netns other than the node's (netnsid " +
                                           std::to_string(cur.link_netnsid) + "): pass deviceID"));
      }
      auto h = OpenRouteNetlink(o_, nullptr);
      if (!h.ok()) return failure_.Fail(kErrIo, h.status().Prepend(what));
      host_route = std::move(*h);
      rt = host_route.get();
      ns = nullptr;
    }
    auto lower = rt->GetLinkByIndex(cur.link_ifindex);
    if (!lower.ok()) {
      return failure_.Fail(kErrDeviceNotFound,
                           lower.status().Prepend(what + ": lower device (ifindex " +
                                                  std::to_string(cur.link_ifindex) + ", in the " +
                                                  (ns == nullptr ? "node" : "pod") +
                                                  "'s netns) of " + cur.kind + " " + cur.name));
    }
    cur = *lower;
  }
  return LowestNetdev{std::move(cur), ns == nullptr};
}

// A VF or host-device netdev (IFLA_PARENT_DEV_NAME, 5.16+).
Status DeviceResolver::ResolveByParentDev(const Netns& pod, const LinkInfo& netdev,
                                          const std::string& via, std::string* dev, uint32_t* port,
                                          bool* in_pod) {
  auto r = host_sysfs_.ResolveByParent(netdev.parent_dev);
  std::optional<DeviceLookup> pod_sysfs;
  if (!r.ok() && r.status().code() == StatusCode::kNotFound) {
    // Already in the pod (exclusive mode): only the pod's view shows it.
    auto root = PodSysfsRoot(pod);
    if (!root.ok()) return failure_.Fail(kErrDeviceNotFound, root.status().Prepend(via));
    pod_sysfs.emplace(*root);
    if (auto in_view = pod_sysfs->ResolveByParent(netdev.parent_dev); in_view.ok()) {
      r = std::move(in_view);
      *in_pod = true;
    }
  }
  if (!r.ok()) return failure_.Fail(kErrDeviceNotFound, r.status().Prepend(via));
  *dev = *r;
  // Which port only matters on a multi-port device, and costs a sysfs mount to learn.
  const DeviceLookup& where = *in_pod ? *pod_sysfs : host_sysfs_;
  if (auto d = where.ReadDevice(*r); d.ok() && d->ports.size() > 1) {
    Status ps = InPodSysfs(pod, [&](const std::string& root) -> Status {
      if (uint32_t n = DeviceLookup(root).NetdevPort(netdev.name); n != 0) *port = n;
      return Status::Ok();
    });
    if (!ps.ok()) {
      log_.Warning("dev_port of " + netdev.name + " unreadable (" + ps.message() +
                   "): using the device's ACTIVE ports");
    }
  }
  return Status::Ok();
}

// A netdev in the pod. Its sysfs is the pod's view (class/net is netns tagged), which in
// exclusive mode does not show the RDMA devices still in the node: read only its bus device
// and dev_port there, and find the RDMA device in the node's sysfs. The view's own answer
// serves when that finds nothing (a soft device over a pod netdev, shared mode).
Status DeviceResolver::ResolveByPodNetdev(const Netns& pod, const LinkInfo& netdev,
                                          const std::string& what, std::string* dev,
                                          uint32_t* port, bool* in_pod) {
  const std::string via = what + " via " + netdev.name;
  std::string bus;
  uint32_t view_port = 0;
  StatusOr<std::string> in_view = NotFoundError("no RDMA device behind netdev " + netdev.name);
  Status s = InPodSysfs(pod, [&](const std::string& root) -> Status {
    const std::string base = root + "/class/net/" + netdev.name;
    if (access(base.c_str(), F_OK) != 0) {
      return ErrnoError(errno, "netdev " + netdev.name + " in the pod's sysfs (" + root + ")");
    }
    DeviceLookup view(root);
    bus = view.NetdevBusDevice(netdev.name);
    in_view = view.ResolveByNetdev(netdev.name, &view_port);
    return Status::Ok();
  });
  if (!s.ok()) return failure_.Fail(kErrDeviceNotFound, s.Prepend(what));
  if (!bus.empty()) {
    auto r = host_sysfs_.ResolveByParent(bus);
    if (r.ok() || r.status().code() != StatusCode::kNotFound) {
      if (!r.ok()) return failure_.Fail(kErrDeviceNotFound, r.status().Prepend(via));
      *dev = *r;
      *port = view_port;
      return Status::Ok();
    }
  }
  if (!in_view.ok()) return failure_.Fail(kErrDeviceNotFound, in_view.status().Prepend(via));
  *dev = *in_view;
  *port = view_port;
  *in_pod = true;
  return Status::Ok();
}

StatusOr<UsableDevice> DeviceResolver::ResolveUsable(const Netns& pod) {
  std::string dev_name;
  uint32_t resolved_port = 0;
  bool in_pod = false;
  RDMAK8S_RETURN_IF_ERROR(ResolveDevice(pod, &dev_name, &resolved_port, &in_pod));
  // Read the device where it shows: the pod's view once it is in the pod (a re-ADD).
  std::optional<DeviceLookup> pod_sysfs;
  if (in_pod) {
    auto root = PodSysfsRoot(pod);
    if (!root.ok()) return failure_.Fail(kErrDeviceNotFound, root.status().Prepend("the pod's sysfs"));
    pod_sysfs.emplace(*root);
  }
  const DeviceLookup& dev_sysfs = in_pod ? *pod_sysfs : host_sysfs_;
  auto dev = dev_sysfs.ReadDevice(dev_name);
  if (!dev.ok()) return failure_.Fail(kErrDeviceNotFound, dev.status().Prepend("read RDMA device"));
  UsableDevice out{std::move(*dev), {}};
  out.ports = PortsOf(out.dev, resolved_port);
  RDMAK8S_RETURN_IF_ERROR(CheckUsable(dev_sysfs, out.dev, out.ports));
  return out;
}

Status DeviceResolver::CheckUsable(const DeviceLookup& sys, const LookedUpDevice& dev,
                               const std::vector<uint32_t>& ports) {
  if (ports.empty()) {
    return failure_.Fail(kErrInvalidConfig,
                         InvalidArgumentError("RDMA device " + dev.name + " has no port " +
                                              std::to_string(sel_.port)));
  }
  for (auto port : ports) {
    // Read again: the port may have changed since ReadDevice (the caller may hold an old read).
    auto p = sys.ReadPort(dev.name, port);
    if (!p.ok()) return failure_.Fail(kErrIo, p.status());
    const std::string where = dev.name + " port " + std::to_string(port);
    // The one port-usable rule (port_usable.h). The netdev's state is not an input: the pod's
    // interface belongs to the netdev plugin that ran before us, and on every RoCE/iWARP driver
    // we know (mlx5, irdma, bnxt_re, rxe, siw, cxgb4) the port is ACTIVE only while its netdev
    // has carrier, so the port's own state already says it.
    const std::string why = PortUnusableReason(dev.transport, *p, std::nullopt);
    if (dev.transport == Transport::kIb) {
      if (p->state == PortState::kInit || p->state == PortState::kArmed) {
        return failure_.Fail(
            kErrTryAgainLater,
            UnavailableError("InfiniBand port " + where + " is " + std::string(PortStateName(p->state)) +
                             ", not ACTIVE (subnet manager not done yet)"));
      }
      if (p->state != PortState::kActive) {
        return failure_.Fail(kErrWiring, FailedPreconditionError("InfiniBand port " + where + " is " +
                                                                 std::string(PortStateName(p->state))));
      }
      if (!why.empty()) {
        return failure_.Fail(kErrWiring,
                             FailedPreconditionError("InfiniBand port " + where + " is not usable: " + why));
      }
    } else if (!why.empty()) {
      // RoCE, iWARP (and unknown transports): the link of a VF or a fresh netdev may still be
      // coming up right after the netdev plugin ran; the runtime retries the ADD on 11.
      return failure_.Fail(
          kErrTryAgainLater,
          UnavailableError(std::string(TransportName(dev.transport)) + " port " + where +
                           " is not usable yet: " + why + " (try again once its link is up)"));
    }
    if (sel_.pkey) {
      auto pkeys = sys.ReadPkeys(dev.name, port);
      if (!pkeys.ok()) return failure_.Fail(kErrIo, pkeys.status());
      bool found = std::any_of(pkeys->begin(), pkeys->end(),
                               [&](uint16_t k) { return (k & 0x7fff) == (*sel_.pkey & 0x7fff); });
      if (!found) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "0x%04x", *sel_.pkey);
        return failure_.Fail(
            kErrInvalidConfig,
            NotFoundError(std::string("pkey ") + buf + " is not in the PKey table of " + where));
      }
    }
  }
  return Status::Ok();
}

Status DeviceResolver::CheckStillUsable(const AttachmentRecord& rec, const Netns& pod,
                                        std::vector<uint32_t>* ports) {
  // The ports ADD chose (older records: as ADD would choose now); IB ports read where the
  // device shows now, the pod's view once it moved.
  *ports = rec.ports;
  failure_.set(kErrWiring);
  return WithDeviceSysfs(rec, &pod, [&](const std::string& root) -> Status {
    DeviceLookup sys(root);
    auto dev = sys.ReadDevice(rec.rdma_dev);
    if (!dev.ok()) return failure_.Fail(kErrWiring, dev.status().Prepend("read RDMA device"));
    if (ports->empty()) *ports = PortsOf(*dev, 0);
    if (rec.transport == "ib") return CheckUsable(sys, *dev, *ports);
    return Status::Ok();
  });
}

StatusOr<bool> DeviceResolver::DeviceVisibleIn(const Netns* ns, const std::string& dev) {
  RDMAK8S_ASSIGN_OR_RETURN(auto nl, OpenRdmaNetlink(o_, ns));
  RDMAK8S_ASSIGN_OR_RETURN(auto devs, nl->ListDevices());
  return std::any_of(devs.begin(), devs.end(), [&](const RdmaLinkInfo& d) { return d.name == dev; });
}

Status DeviceResolver::WithDeviceSysfs(const AttachmentRecord& rec, const Netns* pod,
                                   const std::function<Status(const std::string&)>& fn) {
  // In exclusive mode the device of a live attachment is in the pod, whoever moved it there.
  if ((rec.moved || rec.netns_mode == "exclusive") && pod != nullptr) return InPodSysfs(*pod, fn);
  return fn(sysfs_root_);
}

}  // namespace rdmak8s::cni
