#include "cni/mover.h"

#include <algorithm>
#include <optional>

#include "cni/crash_point.h"
#include "cni/spec.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::cni {

const AttachmentRecord* OtherHolder(const std::vector<AttachmentRecord>& records,
                                    const AttachmentRecord& rec) {
  for (const auto& o : records) {
    if (o.Key() != rec.Key() && o.rdma_dev == rec.rdma_dev && o.netns == rec.netns) return &o;
  }
  return nullptr;
}

Mover::Mover(const PluginOptions& options, StateStore& store, QosChanges& qos_changes,
             DeviceResolver& resolver, Logger& log, FailureCode& failure)
    : o_(options), store_(store), qos_changes_(qos_changes), resolver_(resolver), log_(log), failure_(failure) {}

Status Mover::PlanExclusiveMove(AttachmentRecord* rec, const Netns& pod, bool* need_move) {
  *need_move = false;
  const std::string& dev_name = rec->rdma_dev;
  auto here = resolver_.DeviceVisibleIn(nullptr, dev_name);
  if (!here.ok()) return failure_.Fail(kErrWiring, here.status().Prepend("list RDMA devices"));
  if (*here) {
    *need_move = true;
    return Status::Ok();
  }
  auto there = resolver_.DeviceVisibleIn(&pod, dev_name);
  if (!there.ok()) return failure_.Fail(kErrWiring, there.status().Prepend("list RDMA devices in the pod"));
  if (!*there) {
    return failure_.Fail(
        kErrWiring, FailedPreconditionError("RDMA device " + dev_name +
                                            " is not in the node's netns (held by another pod?)"));
  }
  // In the pod already: an earlier ADD of this attachment moved it (it owns the move), or
  // another attachment of this pod over the same device did (that one brings it home).
  auto others = store_.List();
  if (!others.ok()) return failure_.Fail(kErrState, others.status().Prepend("read other attachments"));
  auto own = std::find_if(others->begin(), others->end(),
                          [&](const AttachmentRecord& o) { return o.Key() == rec->Key(); });
  const bool mine = own != others->end() && own->rdma_dev == dev_name &&
                    own->netns == rec->netns && own->moved;
  rec->moved = mine || OtherHolder(*others, *rec) == nullptr;
  if (!rec->moved) log_.Info(dev_name + " is already in the pod for another attachment");
  return Status::Ok();
}

Status Mover::MoveIn(const AttachmentRecord& rec, RdmaNetlink& host_nl, const Netns& pod,
                     bool need_move) {
  const std::string& dev_name = rec.rdma_dev;
  if (need_move) {
    if (Status s = host_nl.MoveToNetns(dev_name, pod.fd()); !s.ok()) {
      // The record says moved (write-ahead); Release finds it not in the pod and calls it home.
      return failure_.Fail(kErrWiring, s.Prepend("move RDMA device into the pod"));
    }
    log_.Info("moved " + dev_name + " into netns " + rec.netns);
    return Status::Ok();
  }
  auto visible = resolver_.DeviceVisibleIn(&pod, dev_name);
  if (!visible.ok()) return failure_.Fail(kErrWiring, visible.status().Prepend("RDMA netlink in the pod"));
  if (!*visible) {
    return failure_.Fail(kErrWiring, FailedPreconditionError("RDMA device " + dev_name +
                                                             " is not visible from the pod"));
  }
  return Status::Ok();
}

Status Mover::CheckPlace(const AttachmentRecord& rec, const Netns& pod) {
  auto visible = resolver_.DeviceVisibleIn(&pod, rec.rdma_dev);
  if (!visible.ok()) return failure_.Fail(kErrWiring, visible.status());
  if (!*visible) {
    return failure_.Fail(kErrWiring, FailedPreconditionError("RDMA device " + rec.rdma_dev +
                                                             " is not visible in the pod's netns"));
  }
  if (rec.moved || rec.netns_mode == "exclusive") {
    auto home = resolver_.DeviceVisibleIn(nullptr, rec.rdma_dev);
    if (home.ok() && *home) {
      return failure_.Fail(kErrWiring, FailedPreconditionError("RDMA device " + rec.rdma_dev +
                                                               " is back in the node's netns"));
    }
  }
  return Status::Ok();
}

Status Mover::Release(const AttachmentRecord& rec) {
  auto host = CurrentNetns();
  if (!host.ok()) return failure_.Fail(kErrIo, host.status());
  std::optional<AttachmentRecord> next_holder;
  if (rec.moved) {
    // Another live attachment of the same pod over the same device keeps it there, and takes
    // over bringing it home.
    auto others = store_.List();
    if (!others.ok()) return failure_.Fail(kErrState, others.status().Prepend("read other attachments"));
    if (const AttachmentRecord* o = OtherHolder(*others, rec)) next_holder = *o;
  }
  if (next_holder) {
    next_holder->moved = true;
    if (Status s = store_.Save(*next_holder); !s.ok()) return failure_.Fail(kErrState, s);
    CrashPoint("release.next_holder_saved");
    log_.Info(rec.rdma_dev + " stays in the pod for " + next_holder->Key());
  } else if (rec.moved) {
    auto pod = rec.netns.empty() ? StatusOr<Netns>(NotFoundError("no netns recorded"))
                                 : OpenNetns(rec.netns);
    if (!pod.ok()) {
      // The kernel returns RDMA devices to init_net when their netns dies (rdma_dev_exit_net).
      log_.Info("pod netns of " + rec.Key() + " is gone (" + pod.status().message() + "): " +
                rec.rdma_dev + " went home with it");
    } else {
      if (!o_.new_rdma_netlink) return failure_.Fail(kErrWiring, UnimplementedError("no RDMA netlink in this build"));
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
      if (!s.ok()) return failure_.Fail(kErrWiring, s.Prepend("return " + rec.rdma_dev + " to the node"));
      if (in_pod) {
        CrashPoint("release.device_home");
        log_.Info("moved " + rec.rdma_dev + " back to the node's netns");
      } else {
        log_.Info(rec.rdma_dev + " is not in the pod netns any more: already home");
      }
    }
  }
  // Knobs: a node-wide knob or one of the device whose restore fails keeps its original in
  // knobs.json, and every later DEL/GC on the node tries again (RestoreUnneededQosSettings). The
  // attachment itself is released all the same: failing DEL for a knob the node may never let us
  // write again (DCB netlink gone, driver without dcbnl) would keep the pod from ever being torn
  // down, while the original, which is what matters, is not lost.
  std::vector<std::string> pending;
  std::optional<Netns> next_holder_pod;
  if (next_holder && !next_holder->netns.empty()) {
    if (auto p = OpenNetns(next_holder->netns); p.ok()) next_holder_pod = std::move(*p);
  }
  if (next_holder_pod) {
    // The device stays in the pod, where the node's sysfs no longer shows it: its knobs that the
    // next holder doesn't need are restored in the pod's view.
    bool ran = false;
    Status restore = Status::Ok();
    Status view = resolver_.WithDeviceSysfs(*next_holder, &*next_holder_pod, [&](const std::string& root) {
      ran = true;
      restore = qos_changes_.RestoreUnneededQosSettings(rec.Key(), &pending, rec.rdma_dev, root);
      return Status::Ok();
    });
    RDMAK8S_RETURN_IF_ERROR(restore);
    if (!ran) {  // no view of the pod: what needs it stays on record for a later DEL or GC
      log_.Warning("qos: no sysfs view of " + next_holder->netns + " (" + view.message() + ")");
      RDMAK8S_RETURN_IF_ERROR(qos_changes_.RestoreUnneededQosSettings(rec.Key(), &pending));
    }
  } else {
    RDMAK8S_RETURN_IF_ERROR(qos_changes_.RestoreUnneededQosSettings(rec.Key(), &pending));
  }
  if (!pending.empty()) {
    log_.Error("qos: NOT restored: " + Join(pending, "; ") + ". The originals stay in " +
               store_.dir() + "/knobs.json; the next DEL or GC on this node retries");
  }
  if (Status s = store_.Remove(rec.network, rec.container_id, rec.ifname); !s.ok()) {
    return failure_.Fail(kErrState, s);
  }
  CrashPoint("release.record_removed");
  return Status::Ok();
}

}  // namespace rdmak8s::cni
