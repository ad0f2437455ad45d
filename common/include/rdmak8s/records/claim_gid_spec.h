// The CDI spec that tells a pod's containers the RoCE v2 GID index of their own address
// (issue 34, item 2): written by the DRA driver at prepare, filled in by the CNI after its ADD,
// read by the runtime at CreateContainer, removed at unprepare. docs/dra.md, "How a container
// learns its GID index", says why it works (the runtime reads CDI specs again at each
// CreateContainer, which comes after the sandbox's CNI ADD) and what it cannot do.
//
// One spec per (driver, claim, DRA device) whose request opted in (the claim option
// gidIndexEnv), kind "<driver>/claim-gid", one CDI device "<claim_uid>-<device>", in
// <cdi_dir>/<driver>-claim-gid_<claim_uid>_<device>.json. Its only edits are env (a CDI device
// must have edits, or the runtime refuses the spec and CreateContainer fails):
//   - placeholder, written by the driver only when no file is there (a re-prepare after a driver
//     restart keeps what the CNI wrote): RDMAK8S_GID_INDEX=pending;
//   - after the CNI's ADD found the pod's RoCE v2 GID: RDMAK8S_GID_INDEX=<i>,
//     NCCL_IB_GID_INDEX=<i>, UCX_IB_GID_INDEX=<i> (UCX's uct_ib_iface "GID_INDEX" under the
//     "IB_" prefix).
// The file name is built only from a driver name (DNS subdomain), a claim UID (plain name) and a
// DRA device name (DNS label), each validated (kInvalidArgument naming it); '_' is in none of
// them, so one claim's files never match another claim's prefix. Writes are atomic
// (WriteFileAtomic, or a link of a complete file for write-if-absent); the CNI rewrites only a
// regular file that is there (ReadRegularFile), never creates one: no file means the claim did
// not opt in. Free functions, no state; the driver calls them under its preparer lock, the CNI
// under its state lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

inline constexpr char kGidIndexEnv[] = "RDMAK8S_GID_INDEX";
inline constexpr char kGidIndexPending[] = "pending";
inline constexpr size_t kMaxClaimGidSpecBytes = 4096;

// "<driver>/claim-gid".
std::string ClaimGidCdiKind(const std::string& driver);
// "<driver>/claim-gid=<claim_uid>-<device>", the ID kubelet hands the runtime.
std::string ClaimGidCdiDeviceId(const std::string& driver, const std::string& claim_uid,
                                const std::string& device);
// <cdi_dir>/<driver>-claim-gid_<claim_uid>_<device>.json; kInvalidArgument naming the part that
// is not a driver name, a plain claim UID or a DNS label.
StatusOr<std::string> ClaimGidSpecPath(const std::string& cdi_dir, const std::string& driver,
                                       const std::string& claim_uid, const std::string& device);
// The env of the spec: the placeholder when `gid_index` is nullopt, else the three values.
std::map<std::string, std::string> ClaimGidEnv(std::optional<uint32_t> gid_index);
// The spec document (JSON text, stable order).
std::string BuildClaimGidSpec(const std::string& driver, const std::string& claim_uid,
                              const std::string& device, std::optional<uint32_t> gid_index);

// Driver, at prepare: writes the placeholder spec unless a file is already at the path (kept as
// it is, whatever it holds). Errors name the path and the step.
Status WriteClaimGidSpecIfAbsent(const std::string& cdi_dir, const std::string& driver,
                                 const std::string& claim_uid, const std::string& device);
// CNI, after ADD: replaces an existing spec with the values for `gid_index`. Returns false, and
// writes nothing, when no file is there (the claim did not opt in, or was unprepared). A path
// that is not a regular file (a link, a FIFO) or a file past kMaxClaimGidSpecBytes is an error
// naming it, and nothing is written.
StatusOr<bool> SetClaimGidIndex(const std::string& cdi_dir, const std::string& driver,
                                const std::string& claim_uid, const std::string& device,
                                uint32_t gid_index);
// Driver, at unprepare: removes every device's spec of `driver`'s claim `claim_uid`. Nothing
// there is success.
Status RemoveClaimGidSpecs(const std::string& cdi_dir, const std::string& driver,
                           const std::string& claim_uid);

}  // namespace rdmak8s
