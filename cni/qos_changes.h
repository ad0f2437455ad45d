// QosChanges: the QoS settings (cni/qos_settings.h) we changed on the node for live attachments,
// and the originals those settings had before we changed them (knobs.json in the state store,
// cni/state.h).
//   conflict  two live attachments never need one setting at two values;
//   apply     a setting is written only once its original is on disk (write-ahead), so a crash
//             leaves enough to restore it;
//   check     every setting an attachment recorded still holds;
//   restore   the last attachment needing a setting restores its original, unless someone changed
//             the setting since we set it (then their value stays, and our original stays on
//             record); a setting that cannot be restored keeps its original on record;
//   retry     every later DEL and GC on the node tries those again.
// Settings of the RDMA device (tc) are read and written where the device shows now (the pod's view
// once it moved: DeviceResolver::WithDeviceSysfs); node-wide ones in the node's sysfs.
//
// Callers hold the state store's lock. Each failure is recorded on the FailureCode: 103 for a
// conflict or a setting that can't be read or written, 104 for the state store. Not thread safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cni/device_resolver.h"
#include "cni/failure_code.h"
#include "cni/log.h"
#include "cni/plugin_options.h"
#include "cni/state.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/netlink/dcb_netlink.h"
#include "rdmak8s/netlink/netns.h"
#include "rdmak8s/qos/qos_policy.h"

namespace rdmak8s::cni {

class QosChanges {
 public:
  // `options`: the DCB netlink factory. `sysfs_root`/`configfs_root`: the node's. `qos`: the
  // netconf's (with strict, an unsupported knob fails ADD instead of being skipped).
  QosChanges(const PluginOptions& options, StateStore& store, std::string sysfs_root,
            std::string configfs_root, QosPolicy qos, DeviceResolver& resolver, Logger& log,
            FailureCode& failure);

  // The knobs the netconf's qos asks of rec's device `dev` on rec->ports, into rec->qos_settings (and
  // its PF netdev into rec->pf_netdev; none found: only the device's knobs, with a warning).
  // RoCE only: for other transports nothing, logged. *dcb: opened when a knob is a DCB one; 103
  // when it can't be (that is no "unsupported by this driver": strict or not).
  Status PlanQosSettings(AttachmentRecord* rec, const LookedUpDevice& dev, std::unique_ptr<DcbNetlink>* dcb);

  // 103 naming both when another live attachment needs one of rec's knobs at another value.
  Status CheckQosConflicts(const AttachmentRecord& rec);
  // Sets each of rec->qos_settings (`dcb`: for DCB knobs; `pod`: where a moved device shows), saving
  // the originals of those it changes to knobs.json first. A knob this driver doesn't have is
  // dropped from rec->qos_settings with a warning (103 when strict).
  Status ApplyQosSettings(AttachmentRecord* rec, DcbNetlink* dcb, const Netns* pod);
  // 103 naming the knob when one of rec's knobs is not at its value (or can't be read); 5 when
  // the device's sysfs can't be seen.
  Status CheckQosSettings(const AttachmentRecord& rec, const Netns* pod);
  // Restores every knob whose original is saved in knobs.json and that no live attachment other
  // than `leaving` (a record key, or "") needs: `leaving`'s own and any an earlier release could
  // not restore. Those it cannot restore keep their original and are appended to *pending.
  // Fails only when the state store can't be used.
  // `in_pod_dev`/`in_pod_root`: an RDMA device that stays in a pod (another attachment keeps
  // it there) and the sysfs root where it shows: its device knobs (tc) are read and written there.
  Status RestoreUnneededQosSettings(const std::string& leaving, std::vector<std::string>* pending,
                              const std::string& in_pod_dev = "", const std::string& in_pod_root = "");
  // RestoreUnneededQosSettings for no leaving attachment, logging what is still not restored: a DEL
  // with nothing to undo and a GC with nothing stale still retry what an earlier release left.
  Status RetryUnrestoredQosSettings();

 private:
  const PluginOptions& o_;
  StateStore& store_;
  std::string sysfs_root_;
  std::string configfs_root_;
  QosPolicy qos_;
  DeviceResolver& resolver_;
  Logger& log_;
  FailureCode& failure_;
};

}  // namespace rdmak8s::cni
