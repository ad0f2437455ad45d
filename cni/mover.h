// Mover: where an attachment's RDMA device lives. In exclusive RDMA netns mode ADD moves the
// device from the node's netns into the pod's (RDMA netlink, `rdma dev set DEV netns`), and the
// attachment that moved it ("moved" in its record) brings it home when released, unless another
// live attachment of the same pod over the same device still needs it there: that one (the next
// holder) takes the move over. In shared mode nothing moves; the device must be visible from the pod.
// Releasing an attachment also hands its QoS settings back to QosChanges and removes its record.
//
// Callers hold the state store's lock. Each failure is recorded on the FailureCode: 101 for the
// device's whereabouts and moves, 104 for the state store. Not thread safe.
#pragma once

#include <vector>

#include "cni/device_resolver.h"
#include "cni/failure_code.h"
#include "cni/log.h"
#include "cni/plugin_options.h"
#include "cni/qos_changes.h"
#include "cni/state.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netns.h"
#include "rdmak8s/netlink/rdma_netlink.h"

namespace rdmak8s::cni {

// Another live attachment of rec's pod over rec's device: it keeps the device in the pod when
// rec leaves, and brings it home itself. nullptr when there is none (a pointer into `records`).
const AttachmentRecord* OtherHolder(const std::vector<AttachmentRecord>& records,
                                    const AttachmentRecord& rec);

class Mover {
 public:
  // `options`: the RDMA netlink factory.
  Mover(const PluginOptions& options, StateStore& store, QosChanges& qos_changes, DeviceResolver& resolver,
        Logger& log, FailureCode& failure);

  // Exclusive mode, before anything is written: *need_move when rec's device is in the node's
  // netns (ADD moves it); when it is in rec's pod already, sets rec->moved if this attachment
  // owns bringing it home (an earlier ADD of it moved it, or no other attachment of the pod holds
  // it). 101 when the device is in neither netns (held by another pod) or netlink fails; 104 when
  // the other attachments can't be read.
  Status PlanExclusiveMove(AttachmentRecord* rec, const Netns& pod, bool* need_move);
  // need_move: moves rec's device into `pod` through `host_nl` (the node's RDMA netlink);
  // otherwise checks the device is visible from the pod. 101 on failure.
  Status MoveIn(const AttachmentRecord& rec, RdmaNetlink& host_nl, const Netns& pod, bool need_move);
  // CHECK: rec's device is visible from `pod` and, when it was moved (exclusive mode), not back
  // in the node's netns. 101 otherwise.
  Status CheckPlace(const AttachmentRecord& rec, const Netns& pod);
  // Undoes everything `rec` says was done: brings a moved device home (or hands the move to the
  // next holder), restores the knobs nobody else needs, and removes the record. A pod netns that is gone
  // or a device already home is success (the kernel returns RDMA devices to the node's netns
  // when their netns dies). Knobs that could not be restored keep their originals in knobs.json
  // for a later DEL or GC (QosChanges) and do not fail the release. 101 when the device can't be
  // brought home, 104 for the state store.
  Status Release(const AttachmentRecord& rec);

 private:
  const PluginOptions& o_;
  StateStore& store_;
  QosChanges& qos_changes_;
  DeviceResolver& resolver_;
  Logger& log_;
  FailureCode& failure_;
};

}  // namespace rdmak8s::cni
