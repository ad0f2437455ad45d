// What the CNI hands the DRA driver after wiring a device one of the pod's DRA claims holds: the
// attachment facts (rdmak8s/records/attachment_facts.h) the driver puts in the claim's
// status.devices (issue 34 item 1), and the GID index the pod's containers get through the claim's
// GID index CDI spec (rdmak8s/records/claim_gid_spec.h, item 2). Written after a successful ADD,
// removed at DEL and GC (the GID index spec goes at unprepare, by the driver); a failure to write
// them is the caller's to log, never a reason to fail the ADD (the status is informative).
//
// Not thread safe; the CNI calls it under its state lock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni/gid_waiter.h"
#include "cni/log.h"
#include "cni/state.h"
#include "rdmak8s/records/attachment_facts.h"
#include "rdmak8s/records/pod_devices.h"

namespace rdmak8s::cni {

// What an ADD learned, besides its record.
struct AddOutcome {
  const nlohmann::json* result = nullptr;  // the CNI result ADD answers (ips, interfaces)
  std::vector<FoundGid> gids;              // the RoCE v2 GIDs of the pod's addresses
  std::optional<uint16_t> pkey;            // the netconf's PKey
};

// Pure: one facts file per device of `records` (the pod's) whose RDMA device is rec's: the pod
// interface's addresses from the result (those of CNI_IFNAME's interface, or every address when
// the result does not say which), its MAC, the GID of the first address found and its index,
// the QoS settings' names (rec's keys before ':'), the PKey. Values the facts cannot carry
// (an address not in canonical CIDR form, past 16) are left out.
std::vector<AttachmentFacts> DraAttachmentFacts(const std::vector<PodClaimRecord>& records,
                                                const AttachmentRecord& rec, const AddOutcome& add);

// Where the node keeps what the CNI tells the driver and the runtime (node configuration).
struct DraPaths {
  std::string pod_devices_dir;  // pod records and attachment facts
  std::string cdi_dir;          // claims' GID index CDI specs
};

// After ADD: reads the pod's records (K8S_POD_UID of `cni_args`) in `pod_devices_dir`, and writes
// the facts of each claim device rec's device is; then, for each of those with a GID index,
// fills in the claim's GID index spec when the driver made one (SetClaimGidIndex: only for a
// claim of one pod whose request set gidIndexEnv; none is created here), logging each it set.
// A pod without records (not a DRA pod, or no K8S_POD_UID) writes nothing and is success; a
// record or write error names it.
Status RecordDraAttachment(const DraPaths& paths, const std::string& cni_args,
                           const AttachmentRecord& rec, const AddOutcome& add, Logger& log);
// At DEL and GC: every facts file of rec's attachment.
Status ForgetDraAttachment(const std::string& pod_devices_dir, const AttachmentRecord& rec);

}  // namespace rdmak8s::cni
