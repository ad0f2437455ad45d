// Invocation (cni/invocation.h): the steps of each command.
#include "cni/invocation.h"

#include <unistd.h>

#include <set>
#include <utility>

#include "cni/crash_point.h"
#include "cni/dra_attachment.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/device/device_lookup.h"

namespace rdmak8s::cni {

using nlohmann::json;

// ADD, step 1: the previous plugin's result, converted to the netconf's version.
StatusOr<json> Invocation::ChainedResult() {
  if (!conf_.prev_result) {
    return failure_.Fail(kErrInvalidConfig,
                         InvalidArgumentError("rdmak8s is a chained plugin: ADD needs a prevResult "
                                              "(put it after the plugin that creates " +
                                              env_.ifname + ")"));
  }
  CniError cerr;
  auto converted = ConvertResult(*conf_.prev_result, conf_.cni_version, &cerr);
  if (!converted) return failure_.Fail(cerr.code, InvalidArgumentError(cerr.msg));
  return *std::move(converted);
}

// ADD, step 2: the pod's netns, and a node that has RDMA at all. Checked before the state dir is
// touched: a node without RDMA is left exactly as it was.
StatusOr<Netns> Invocation::OpenPodOnRdmaNode() {
  auto pod = OpenNetns(env_.netns);
  if (!pod.ok()) {
    return failure_.Fail(
        pod.status().code() == StatusCode::kNotFound ? kErrUnknownContainer : kErrInvalidEnv,
        pod.status().Prepend("CNI_NETNS"));
  }
  const std::string ib = sysfs_root_ + "/class/infiniband";
  if (access(ib.c_str(), F_OK) != 0) {
    return failure_.Fail(
        kErrDeviceNotFound,
        ErrnoError(errno, "no RDMA on this node (no RDMA core loaded: " + ib + ")"));
  }
  return pod;
}

AttachmentRecord Invocation::NewRecord(const UsableDevice& usable, RdmaNetnsMode mode) const {
  AttachmentRecord rec;
  rec.network = conf_.name;
  rec.container_id = env_.container_id;
  rec.ifname = env_.ifname;
  rec.netns = env_.netns;
  rec.cni_version = conf_.cni_version;
  rec.rdma_dev = usable.dev.name;
  rec.transport = std::string(TransportName(usable.dev.transport));
  rec.netns_mode = std::string(RdmaNetnsModeName(mode));
  rec.ports = usable.ports;
  return rec;
}

// Undoes what ADD did to `rec` (the move, the knobs; its record goes) and answers `cause` with the
// code it failed with.
Status Invocation::RollBack(const AttachmentRecord& rec, Status cause) {
  int code = failure_.code();
  log_.Error("ADD failed, rolling back: " + cause.message());
  Status r = mover_.Release(rec);
  if (!r.ok()) log_.Error("rollback incomplete: " + r.message());
  failure_.set(code);
  return cause;
}

// QoS after the move. Moving an RDMA device to another netns in exclusive mode unregisters and
// re-registers it (rdma_dev_change_netns in drivers/infiniband/core/device.c: disable_device ...
// enable_device_and_get), so every ib_client drops its per-device state and makes a fresh one:
// rdma_cm's cma_remove_one/cma_add_one reset default_roce_tos to 0. The rdma_cm configfs group
// (drivers/infiniband/core/cma_configfs.c) is not per-netns and finds its cma_device by name on
// each access, so a write made now, from the node's netns, lands on the re-registered device and
// stays; one made before the move was lost (CHECK then answered 103). Node-wide knobs (DCB, ECN
// of the PF netdev) do not care, and go with them for one write-ahead of originals and one
// rollback path. The caller rolls back on an error.
Status Invocation::ApplyQosAfterMove(AttachmentRecord* rec, DcbNetlink* dcb, Netns* pod) {
  const size_t planned_knobs = rec->qos_settings.size();
  RDMAK8S_RETURN_IF_ERROR(qos_changes_.ApplyQosSettings(rec, dcb, pod));
  // Unsupported knobs were dropped: record that (each save costs an fsync, so only then).
  if (rec->qos_settings.size() != planned_knobs) {
    if (Status s = store_.Save(*rec); !s.ok()) return failure_.Fail(kErrState, s);
    CrashPoint("add.record_updated");
  }
  return Status::Ok();
}

// Waits for the RoCE v2 GIDs of the pod's addresses WITHOUT the node-wide lock: one pod whose GID
// never shows must not stall every ADD/DEL/GC on the node for gidTimeoutMs. The record is on
// disk, so meanwhile other invocations see this attachment as live (its device, its knobs); a DEL
// or GC may even release it, which is why it is read back under the lock before deciding.
// `lock` is held again on return unless re-taking it failed (then the record stays for DEL/GC and
// nothing is rolled back); a failed wait rolls back.
Status Invocation::WaitForGidsUnlocked(AttachmentRecord* rec, const Netns& pod,
                                       std::optional<StateStore::Lock>* lock,
                                       std::vector<FoundGid>* found) {
  lock->reset();
  Status waited = gids_.CheckGids(*rec, pod, rec->ports, conf_.gid_timeout_ms, /*report=*/true, found);
  const int wait_code = failure_.code();
  auto relock = store_.Acquire();
  if (!relock.ok()) {
    return failure_.Fail(kErrState, relock.status().Prepend("re-take the state lock after the GID wait"));
  }
  lock->emplace(std::move(*relock));
  CrashPoint("add.gids_waited");
  auto now = store_.Load(rec->network, rec->container_id, rec->ifname);
  if (!now.ok()) {
    if (now.status().code() == StatusCode::kNotFound) {
      return failure_.Fail(kErrWiring,
                           FailedPreconditionError("attachment " + rec->Key() +
                                                   " was released by a concurrent "
                                                   "DEL or GC while ADD waited for its GIDs"));
    }
    return RollBack(*rec, failure_.Fail(kErrState, now.status()));
  }
  *rec = std::move(*now);  // (a Release of another attachment may have handed it the move)
  if (!waited.ok()) {
    failure_.set(wait_code);
    return RollBack(*rec, waited);
  }
  return Status::Ok();
}

// SPEC.md 1.1.0 lets a plugin fill in pciID of the interface it wired.
void Invocation::FillInPciId(const LookedUpDevice& dev, json* result) const {
  if (CompareVersions(conf_.cni_version, "1.1.0") < 0 || dev.parent.kind != ParentKind::kPci ||
      !result->contains("interfaces")) {
    return;
  }
  for (auto& i : (*result)["interfaces"]) {
    if (i.value("name", "") == env_.ifname && !i.value("sandbox", "").empty() && !i.contains("pciID")) {
      i["pciID"] = dev.pci_address();
    }
  }
}

Status Invocation::Add(json* result) {
  RDMAK8S_ASSIGN_OR_RETURN(json converted, ChainedResult());
  RDMAK8S_ASSIGN_OR_RETURN(Netns pod, OpenPodOnRdmaNode());
  std::optional<StateStore::Lock> lock;
  if (auto l = store_.Acquire(); l.ok()) {
    lock.emplace(std::move(*l));
  } else {
    return failure_.Fail(kErrState, l.status());
  }

  // Plan: which device, which mode, what moves, which knobs; a QoS conflict is refused before
  // anything is written or moved.
  RDMAK8S_ASSIGN_OR_RETURN(UsableDevice usable, resolver_.ResolveUsable(pod));
  const LookedUpDevice& dev = usable.dev;
  auto host_nl = OpenRdmaNetlink(o_, nullptr);
  if (!host_nl.ok()) return failure_.Fail(kErrWiring, host_nl.status().Prepend("open RDMA netlink"));
  RDMAK8S_ASSIGN_OR_RETURN(RdmaNetnsMode mode, NetnsMode(**host_nl, kErrWiring));
  AttachmentRecord rec = NewRecord(usable, mode);
  log_.Info("device " + dev.name + " (" + rec.transport + ", " + rec.netns_mode + " mode)");
  bool need_move = false;
  if (mode == RdmaNetnsMode::kExclusive) {
    RDMAK8S_RETURN_IF_ERROR(mover_.PlanExclusiveMove(&rec, pod, &need_move));
  }
  std::unique_ptr<DcbNetlink> dcb;
  RDMAK8S_RETURN_IF_ERROR(qos_changes_.PlanQosSettings(&rec, dev, &dcb));
  RDMAK8S_RETURN_IF_ERROR(qos_changes_.CheckQosConflicts(rec));

  // Write-ahead record: from here on a crash leaves enough on disk for DEL/GC to undo.
  if (need_move) rec.moved = true;
  if (Status s = store_.Save(rec); !s.ok()) return failure_.Fail(kErrState, s);
  CrashPoint("add.record_saved");

  if (Status s = mover_.MoveIn(rec, **host_nl, pod, need_move); !s.ok()) return RollBack(rec, s);
  CrashPoint("add.device_placed");
  if (Status s = ApplyQosAfterMove(&rec, dcb.get(), &pod); !s.ok()) return RollBack(rec, s);
  if (conf_.ensure_ipv6_gid) {
    if (Status s = gids_.EnsureIpv6(pod); !s.ok()) {
      return RollBack(rec, failure_.Fail(kErrIo, s.Prepend("ensureIPv6Gid")));
    }
    CrashPoint("add.ipv6_enabled");
  }
  AddOutcome added;  // what the DRA driver's claim status gets (cni/dra_attachment.h)
  added.pkey = conf_.pkey;
  if (dev.transport == Transport::kRoce) {
    RDMAK8S_RETURN_IF_ERROR(WaitForGidsUnlocked(&rec, pod, &lock, &added.gids));
  }

  FillInPciId(dev, &converted);
  *result = std::move(converted);
  // Informative only: the pod is wired whether or not the claim's status can say so.
  added.result = result;
  if (Status s = RecordDraAttachment({pod_devices_dir_, cdi_dir_}, env_.args, rec, added, log_);
      !s.ok()) {
    log_.Warning("DRA claim status: " + s.message());
  }
  CrashPoint("add.done");
  return Status::Ok();
}

Status Invocation::Del() {
  if (access(store_.dir().c_str(), F_OK) != 0 && errno == ENOENT) {
    log_.Info("no state dir " + store_.dir() + ": nothing was attached here");
    return Status::Ok();  // and don't create one: a DEL after a failed ADD leaves no trace
  }
  auto lock = store_.Acquire();
  if (!lock.ok()) return failure_.Fail(kErrState, lock.status());
  auto rec = store_.Load(conf_.name, env_.container_id, env_.ifname);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) {
      log_.Info("no attachment recorded: nothing to undo");
      // A retried DEL also retries knobs an earlier release could not restore.
      if (Status s = qos_changes_.RetryUnrestoredQosSettings(); !s.ok()) {
        log_.Warning("qos: retry of unrestored knobs: " + s.message());
      }
      return Status::Ok();
    }
    return failure_.Fail(kErrState, rec.status());
  }
  RDMAK8S_RETURN_IF_ERROR(mover_.Release(*rec));
  if (Status s = ForgetDraAttachment(pod_devices_dir_, *rec); !s.ok()) log_.Warning("DRA claim status: " + s.message());
  return Status::Ok();
}

Status Invocation::Check() {
  if (!conf_.prev_result) {
    return failure_.Fail(kErrInvalidConfig, InvalidArgumentError("CHECK needs a prevResult"));
  }
  CniError cerr;
  if (!ConvertResult(*conf_.prev_result, conf_.cni_version, &cerr)) {
    return failure_.Fail(cerr.code, InvalidArgumentError(cerr.msg));
  }
  auto pod = OpenNetns(env_.netns);
  if (!pod.ok()) return failure_.Fail(kErrUnknownContainer, pod.status().Prepend("CNI_NETNS"));
  auto lock = store_.Acquire();
  if (!lock.ok()) return failure_.Fail(kErrState, lock.status());
  auto rec = store_.Load(conf_.name, env_.container_id, env_.ifname);
  if (!rec.ok()) {
    return failure_.Fail(rec.status().code() == StatusCode::kNotFound ? kErrWiring : kErrState,
                         rec.status().Prepend("no record of this attachment"));
  }
  RDMAK8S_RETURN_IF_ERROR(mover_.CheckPlace(*rec, *pod));
  std::vector<uint32_t> ports;
  RDMAK8S_RETURN_IF_ERROR(resolver_.CheckStillUsable(*rec, *pod, &ports));
  if (rec->transport == "roce") RDMAK8S_RETURN_IF_ERROR(gids_.CheckGids(*rec, *pod, ports, 0, false));
  return qos_changes_.CheckQosSettings(*rec, &*pod);
}

Status Invocation::Gc() {
  if (access(store_.dir().c_str(), F_OK) != 0 && errno == ENOENT) return Status::Ok();
  auto lock = store_.Acquire();
  if (!lock.ok()) return failure_.Fail(kErrState, lock.status());
  auto recs = store_.List(conf_.name);
  if (!recs.ok()) return failure_.Fail(kErrState, recs.status());
  std::set<std::pair<std::string, std::string>> valid;
  for (const auto& a : conf_.valid_attachments) valid.insert({a.container_id, a.ifname});
  Status first;
  int first_code = 0;
  bool released = false;
  for (const auto& rec : *recs) {
    if (valid.count({rec.container_id, rec.ifname})) continue;
    log_.Info("GC: releasing stale attachment " + rec.Key());
    released = true;
    if (Status s = mover_.Release(rec); !s.ok() && first.ok()) {
      first = s.Prepend("GC " + rec.Key());
      first_code = failure_.code();
    } else if (Status f = ForgetDraAttachment(pod_devices_dir_, rec); !f.ok()) {
      log_.Warning("DRA claim status: " + f.message());
    }
  }
  if (!released) {  // (each Release already retried them)
    if (Status s = qos_changes_.RetryUnrestoredQosSettings(); !s.ok() && first.ok()) {
      first = s.Prepend("GC: knobs left unrestored earlier");
      first_code = failure_.code();
    }
  }
  if (!first.ok()) return failure_.Fail(first_code, first);
  return Status::Ok();
}

StatusOr<RdmaNetnsMode> Invocation::NetnsMode(RdmaNetlink& nl, int code) {
  auto mode = nl.GetNetnsMode();
  if (!mode.ok()) return failure_.Fail(code, mode.status().Prepend("read RDMA netns mode"));
  const std::string name(RdmaNetnsModeName(*mode));
  if (!conf_.netns_mode.empty() && conf_.netns_mode != name) {
    return failure_.Fail(
        code, FailedPreconditionError("netconf wants RDMA netns mode " + conf_.netns_mode +
                                      ", the kernel is in " + name + " mode"));
  }
  return *mode;
}

Status Invocation::StatusCmd() {
  const std::string ib = sysfs_root_ + "/class/infiniband";
  if (access(ib.c_str(), F_OK) != 0) {
    return failure_.Fail(kErrPluginNotAvailable,
                         ErrnoError(errno, "RDMA unavailable: no RDMA core (" + ib + ")"));
  }
  auto nl = OpenRdmaNetlink(o_, nullptr);
  if (!nl.ok()) return failure_.Fail(kErrPluginNotAvailable, nl.status().Prepend("RDMA netlink unavailable"));
  if (auto mode = NetnsMode(**nl, kErrPluginNotAvailable); !mode.ok()) return mode.status();
  if (!conf_.device_id.empty()) {
    auto r = resolver_.host_sysfs().ResolveDeviceId(conf_.device_id);
    // In exclusive mode a device in a pod is hidden from the node's sysfs, not gone.
    if (!r.ok() && (r.status().code() != StatusCode::kNotFound ||
                    !resolver_.host_sysfs().ResolveHiddenDeviceId(conf_.device_id).ok())) {
      return failure_.Fail(kErrPluginNotAvailable, r.status());
    }
  }
  return Status::Ok();
}

}  // namespace rdmak8s::cni
