#include "cni/qos_changes.h"

#include <algorithm>
#include <map>

#include "cni/crash_point.h"
#include "cni/qos_settings.h"
#include "cni/spec.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::cni {

QosChanges::QosChanges(const PluginOptions& options, StateStore& store, std::string sysfs_root,
                     std::string configfs_root, QosPolicy qos, DeviceResolver& resolver, Logger& log,
                     FailureCode& failure)
    : o_(options),
      store_(store),
      sysfs_root_(std::move(sysfs_root)),
      configfs_root_(std::move(configfs_root)),
      qos_(std::move(qos)),
      resolver_(resolver),
      log_(log),
      failure_(failure) {}

Status QosChanges::PlanQosSettings(AttachmentRecord* rec, const LookedUpDevice& dev,
                            std::unique_ptr<DcbNetlink>* dcb) {
  if (dev.transport == Transport::kRoce && !qos_.empty()) {
    std::string pf;
    if (auto p = resolver_.host_sysfs().PfNetdev(dev); p.ok()) {
      pf = *p;
    } else {
      log_.Warning("qos: no PF netdev for " + rec->rdma_dev + ": " + p.status().message());
    }
    rec->pf_netdev = pf;
    rec->qos_settings = RequiredQosSettings(qos_, pf, rec->rdma_dev, rec->ports);
    // Failing to open DCB netlink is no "knob unsupported by this driver" (that shows when a
    // knob is read): it is an error, strict or not.
    auto dcb_knob = std::find_if(rec->qos_settings.begin(), rec->qos_settings.end(),
                                 [](const auto& k) { return IsDcbQosSetting(k.first); });
    if (dcb_knob != rec->qos_settings.end()) {
      auto d = OpenDcbNetlink(o_);
      if (!d.ok()) {
        return failure_.Fail(kErrQos, d.status().Prepend("qos: open DCB netlink for " + dcb_knob->first));
      }
      *dcb = std::move(*d);
    }
  } else if (!qos_.empty()) {
    log_.Info("qos: ignored for " + rec->transport + " device " + rec->rdma_dev +
              " (lossless settings are for RoCE)");
  }
  return Status::Ok();
}

Status QosChanges::CheckQosConflicts(const AttachmentRecord& rec) {
  if (rec.qos_settings.empty()) return Status::Ok();
  auto others = store_.List();
  if (!others.ok()) return failure_.Fail(kErrState, others.status().Prepend("read other attachments"));
  for (const auto& [id, value] : rec.qos_settings) {
    for (const auto& o : *others) {
      if (o.Key() == rec.Key()) continue;
      auto it = o.qos_settings.find(id);
      if (it != o.qos_settings.end() && it->second != value) {
        return failure_.Fail(
            kErrQos,
            FailedPreconditionError("qos: " + rec.Key() + " needs " + id + " = " + value +
                                    ", but live attachment " + o.Key() + " needs " + it->second));
      }
    }
  }
  return Status::Ok();
}

Status QosChanges::ApplyQosSettings(AttachmentRecord* rec, DcbNetlink* dcb, const Netns* pod) {
  if (rec->qos_settings.empty()) return Status::Ok();
  // Knobs of the RDMA device (tc's sysfs attribute) are read where the device shows now.
  auto with_ctx = [&](const std::string& id, const std::function<Status(const QosSettingContext&)>& fn) {
    if (IsNodeWideQosSetting(id)) return fn(QosSettingContext{dcb, sysfs_root_, sysfs_root_, configfs_root_});
    return resolver_.WithDeviceSysfs(*rec, pod, [&](const std::string& root) -> Status {
      return fn(QosSettingContext{dcb, sysfs_root_, root, configfs_root_});
    });
  };
  std::map<std::string, std::string> keep;
  std::map<std::string, std::string> to_change;  // id -> current value
  for (const auto& [id, value] : rec->qos_settings) {
    StatusOr<std::string> cur = std::string();
    // `&id = id`: clang before 16 cannot capture a structured binding by [&] (P1091).
    if (Status s = with_ctx(id, [&, &id = id](const QosSettingContext& ctx) {
          cur = ReadQosSetting(ctx, id);
          return Status::Ok();
        });
        !s.ok()) {
      return failure_.Fail(kErrQos, s.Prepend("qos: read " + id));
    }
    if (!cur.ok() && cur.status().code() == StatusCode::kUnimplemented) {
      if (qos_.strict) {
        return failure_.Fail(kErrQos, cur.status().Prepend("qos (strict): " + id + " unsupported"));
      }
      log_.Warning("qos: " + id + " unsupported, skipped: " + cur.status().message());
      continue;
    }
    if (!cur.ok()) return failure_.Fail(kErrQos, cur.status().Prepend("qos: read " + id));
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
    auto originals = store_.LoadQosOriginals();
    if (!originals.ok()) return failure_.Fail(kErrState, originals.status());
    bool changed = false;
    for (const auto& [id, cur] : to_change) {
      auto it = originals->find(id);
      if (it == originals->end() || !it->second.left_as.empty()) {
        // New, or left to an admin earlier: what is there now is the original.
        (*originals)[id] = QosOriginal{cur, keep[id], ""};
        changed = true;
      } else if (it->second.applied != keep[id]) {  // an unrestored one: its original stands
        it->second.applied = keep[id];
        changed = true;
      }
    }
    if (changed) {
      if (Status s = store_.SaveQosOriginals(*originals); !s.ok()) return failure_.Fail(kErrState, s);
      CrashPoint("add.originals_saved");
    }
    for (const auto& [id, cur] : to_change) {
      Status s = with_ctx(
          id, [&, &id = id](const QosSettingContext& ctx) { return WriteQosSetting(ctx, id, keep[id]); });
      if (!s.ok()) return failure_.Fail(kErrQos, s.Prepend("qos"));
      CrashPoint("add.knob_applied");
      log_.Info("qos: " + id + " = " + keep[id] + " applied (was " + cur + ")");
    }
  }
  rec->qos_settings = std::move(keep);
  return Status::Ok();
}

Status QosChanges::CheckQosSettings(const AttachmentRecord& rec, const Netns* pod) {
  std::unique_ptr<DcbNetlink> dcb;
  if (auto d = OpenDcbNetlink(o_); d.ok()) dcb = std::move(*d);
  for (const auto& [id, value] : rec.qos_settings) {
    StatusOr<std::string> cur = std::string();
    Status rs = resolver_.WithDeviceSysfs(rec, pod, [&, &id = id](const std::string& root) -> Status {
      QosSettingContext ctx{dcb.get(), sysfs_root_, root, configfs_root_};
      cur = ReadQosSetting(ctx, id);
      return Status::Ok();
    });
    if (!rs.ok()) return failure_.Fail(kErrIo, rs);
    if (!cur.ok()) return failure_.Fail(kErrQos, cur.status().Prepend("qos: read " + id));
    if (*cur != value) {
      return failure_.Fail(kErrQos, FailedPreconditionError("qos: " + id + " is " + *cur + ", want " + value));
    }
  }
  return Status::Ok();
}

Status QosChanges::RestoreUnneededQosSettings(const std::string& leaving,
                                        std::vector<std::string>* pending,
                                        const std::string& in_pod_dev,
                                        const std::string& in_pod_root) {
  auto originals = store_.LoadQosOriginals();
  if (!originals.ok()) return failure_.Fail(kErrState, originals.status());
  if (originals->empty()) return Status::Ok();
  auto others = store_.List();
  if (!others.ok()) return failure_.Fail(kErrState, others.status());
  std::unique_ptr<DcbNetlink> dcb;
  Status dcb_error;
  bool dcb_tried = false;
  bool changed = false;
  for (auto it = originals->begin(); it != originals->end();) {
    const std::string& id = it->first;
    QosOriginal& saved = it->second;
    const std::string& orig = saved.original;
    if (!saved.left_as.empty()) {  // decided earlier: the admin's value stays
      ++it;
      continue;
    }
    bool needed = std::any_of(others->begin(), others->end(), [&](const AttachmentRecord& o) {
      return o.Key() != leaving && o.qos_settings.count(id);
    });
    if (needed) {  // the last attachment needing it restores it
      ++it;
      continue;
    }
    if (IsDcbQosSetting(id) && !dcb_tried) {
      dcb_tried = true;
      if (auto d = OpenDcbNetlink(o_); d.ok()) {
        dcb = std::move(*d);
      } else {
        dcb_error = d.status().Prepend("open DCB netlink");
      }
    }
    // Without a DCB handle a DCB knob is NOT restored: WriteQosSetting's "unsupported" is no success.
    auto setting = QosSetting::FromKey(id);
    const bool in_pod = !in_pod_dev.empty() && setting.ok() && setting->sysfs_device() == in_pod_dev;
    QosSettingContext ctx{dcb.get(), sysfs_root_, in_pod ? in_pod_root : sysfs_root_, configfs_root_};
    StatusOr<std::string> now = IsDcbQosSetting(id) && dcb == nullptr ? StatusOr<std::string>(dcb_error)
                                                                : ReadQosSetting(ctx, id);
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
      s = WriteQosSetting(ctx, id, orig);
      if (s.ok()) CrashPoint("release.knob_restored");
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
    if (Status s = store_.SaveQosOriginals(*originals); !s.ok()) return failure_.Fail(kErrState, s);
    CrashPoint("release.originals_saved");
  }
  return Status::Ok();
}

Status QosChanges::RetryUnrestoredQosSettings() {
  std::vector<std::string> pending;
  RDMAK8S_RETURN_IF_ERROR(RestoreUnneededQosSettings("", &pending));
  if (!pending.empty()) log_.Error("qos: still NOT restored: " + Join(pending, "; "));
  return Status::Ok();
}

}  // namespace rdmak8s::cni
