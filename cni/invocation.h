// Invocation: one command of one CNI invocation (ADD, DEL, CHECK, GC, STATUS), what each does in
// which order, and how a failure is answered and undone. The work is done by rooms, each given
// what it needs:
//   cni/device_resolver.h  which RDMA device, where its sysfs shows, whether it can serve
//   cni/qos_changes.h      the QoS knobs: conflicts, write-ahead apply, check, restore, retry
//                          (each knob, PFC included, is written by rdmak8s/qos/qos_setting.h)
//   cni/mover.h            the device into the pod and home again, next holders, and Release:
//                          what DEL and GC undo, also when the pod's netns is already gone
//   cni/gid_waiter.h       the RoCE v2 GIDs of the pod's IPs
//   cni/dra_attachment.h   what a DRA claim's status and GID index spec get after ADD
// The error code of a failed command is code() (cni/failure_code.h); Add's errors after the
// write-ahead record have been rolled back.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni/device_resolver.h"
#include "cni/failure_code.h"
#include "cni/gid_waiter.h"
#include "cni/log.h"
#include "cni/mover.h"
#include "cni/netconf.h"
#include "cni/node_config.h"
#include "cni/plugin_options.h"
#include "cni/qos_changes.h"
#include "cni/spec.h"
#include "cni/state.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netns.h"

namespace rdmak8s::cni {

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
        pod_devices_dir_(paths.pod_devices_dir),
        cdi_dir_(paths.cdi_dir),
        store_(paths.state_dir, [&log](const std::string& m) { log.Error(m); }),
        // The pod's view is the node's sysfs seen from the pod's netns: for the node's own sysfs
        // root, however it was named. Another root (a netconf override: a fixture tree) is read
        // as is.
        resolver_(o,
                  DeviceSelector{conf_.device_id, env_.ifname, conf_.port, conf_.pkey, env_.args,
                                 conf_.dra_request, paths.pod_devices_dir, paths.pod_resources_socket},
                  sysfs_root_,
                  sysfs_as_is ? nullptr : o.pod_sysfs, log, failure_),
        qos_changes_(o, store_, sysfs_root_, paths.configfs_root, conf_.qos, resolver_, log, failure_),
        mover_(o, store_, qos_changes_, resolver_, log, failure_),
        gids_(o, env_.ifname, resolver_, log, failure_) {}

  int code() const { return failure_.code(); }

  Status Add(nlohmann::json* result);
  Status Del();
  Status Check();
  Status Gc();
  Status StatusCmd();

 private:
  // The kernel's RDMA netns mode, read through `nl`; `code` when it can't be read or is not the
  // netconf's netnsMode.
  StatusOr<RdmaNetnsMode> NetnsMode(RdmaNetlink& nl, int code);

  // ADD's steps, in the order Add takes them.
  StatusOr<nlohmann::json> ChainedResult();
  StatusOr<Netns> OpenPodOnRdmaNode();
  AttachmentRecord NewRecord(const UsableDevice& usable, RdmaNetnsMode mode) const;
  Status RollBack(const AttachmentRecord& rec, Status cause);
  Status ApplyQosAfterMove(AttachmentRecord* rec, DcbNetlink* dcb, Netns* pod);
  Status WaitForGidsUnlocked(AttachmentRecord* rec, const Netns& pod,
                             std::optional<StateStore::Lock>* lock, std::vector<FoundGid>* found);
  void FillInPciId(const LookedUpDevice& dev, nlohmann::json* result) const;

  const PluginOptions& o_;
  CniEnv env_;
  NetConf conf_;
  Logger& log_;
  std::string sysfs_root_;
  std::string pod_devices_dir_;  // the DRA records, and the attachment facts for the driver
  std::string cdi_dir_;          // claims' GID index specs (rdmak8s/records/claim_gid_spec.h)
  StateStore store_;
  FailureCode failure_;
  DeviceResolver resolver_;
  QosChanges qos_changes_;
  Mover mover_;
  GidWaiter gids_;
};

}  // namespace rdmak8s::cni
