// Preparer: what NodePrepareResources and NodeUnprepareResources do for one claim, whichever
// API version kubelet called (kubelet/dra_service.h adapts both to this).
//
// Prepare(ref), Unprepare(ref): the namespace must be a DNS-1123 label, the name a DNS-1123
//   subdomain and the UID a plain name ([A-Za-z0-9-]); anything else is kInvalidArgument naming
//   the field and its value (escaped), before any request or file.
// Prepare(ref):
//   - a claim already prepared (checkpoint.h) is answered from the checkpoint, without asking
//     the API server again: kubelet calls again after its own restart and after a lost answer;
//     the namespace and name must still match the UID's (kInvalidArgument otherwise);
//   - else the claim is read through the ClaimReader; kubelet's UID must be the object's
//     (kFailedPrecondition: a claim deleted and re-created under the same name is not the one
//     kubelet means), and it must be allocated;
//   - only the results for our driver are ours (another driver prepares the rest); each must
//     name a device of this node's pool in the DeviceCatalog that is present and healthy
//     (kNotFound / kFailedPrecondition naming pool/device);
//   - opaque config for our driver (status.allocation.devices.config, class entries before the
//     claim's, the last that applies to a request wins) takes the device plugin's "allocate"
//     options (ncclEnv, ucxEnv, issm, roceUmad, env); a bad one fails the claim naming it.
//     Whose each option is (docs/trust.md): a FromClass entry (a DeviceClass: the cluster
//     admin's) may set all of them, a FromClaim entry (any user of the claim's namespace) only
//     kClaimSettableOptions; any other key in a claim's entry, or an entry of another source,
//     fails the claim (kPermissionDenied naming the key) before anything is written;
//   - gidIndexEnv (a request's option) on a RoCE device of a claim reserved for exactly one pod:
//     the device gets a second CDI device ID, ClaimGidCdiDeviceId, whose spec
//     (rdmak8s/records/claim_gid_spec.h) is written with a placeholder only when absent, so a
//     re-prepare keeps the GID index the CNI wrote there. A claim reserved for several pods gets
//     none (one spec cannot carry each pod's index: their claim status does); nor does IB (no GID
//     index to choose) or iWARP;
//   - write-ahead: the claim is checkpointed kPreparing, then its CDI spec
//     (claim_cdi_spec.h), the GID index specs and one pod record per reserved pod
//     (rdmak8s/records/pod_devices.h) are written, then it is checkpointed kPrepared. A failure at
//     any step leaves what is on disk for a retry of Prepare (which redoes every step) or for
//     Unprepare to remove.
//   The pod UIDs of status.reservedFor must be plain names too (kInvalidArgument before the
//   write-ahead): they name the pod records.
//   Returns the devices kubelet gets, with their CDI device IDs.
// Unprepare(ref): never waits on the API server. Removes the claim's CDI spec, its GID index
//   specs, pod records and the CNI's attachment facts (rdmak8s/records/attachment_facts.h) and
//   forgets it (a pod UID that cannot name a record, left by an older driver, is skipped). A
//   claim the checkpoint does not know is success (its spec file, if one was left, is still
//   removed): an unprepare may run twice, and after a restart that lost nothing there is nothing
//   to undo.
//
// Thread safety: Prepare and Unprepare may be called from any thread. No API call is made under
// the preparer's lock: the claim read runs outside it, so a slow or hung answer delays only the
// claim it is for, never an unprepare or a claim the checkpoint answers; the state and the files
// are updated under the lock (file writes are short). An unprepare of a claim whose read is
// running makes that prepare fail (kFailedPrecondition) without writing anything.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "dra/checkpoint.h"
#include "dra/claim_reader.h"
#include "dra/claim_status_reporter.h"
#include "dra/device_catalog.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

// The opaque options a ResourceClaim may set itself: env that names the devices it got (and the
// GID index of the pod's own address, gidIndexEnv: rdmak8s/records/claim_gid_spec.h). The rest
// (issm, roceUmad, env) reach the subnet manager, raw MADs or every process of the pod and are
// the admin's, set in a DeviceClass.
inline constexpr std::array<std::string_view, 3> kClaimSettableOptions = {"ncclEnv", "ucxEnv",
                                                                           "gidIndexEnv"};

struct PreparerOptions {
  std::string driver_name = "rdma.rdmak8s.io";
  std::string state_dir = "/var/lib/rdmak8s/dra";
  std::string cdi_dir = "/var/run/cdi";
  std::string dev_root = "/dev";             // host paths of char devices in CDI specs
  std::string pod_devices_dir = "/run/rdmak8s/dra-pods";  // pod_devices.h records for the CNI
  // A claim read never takes longer than this, nor ends later than answer_margin before
  // kubelet's deadline for the call (kubelet gives every DRA call 45 s:
  // defaultClientCallTimeout in pkg/kubelet/cm/dra/plugin), so kubelet hears why.
  std::chrono::milliseconds claim_read_timeout{10000};
  std::chrono::milliseconds answer_margin{2000};
};

// A claim as kubelet names it.
struct ClaimRef {
  std::string namespace_name;
  std::string uid;
  std::string name;
};

class Preparer {
 public:
  // Loads the checkpoint (errors as Checkpoint::Load). `reader` and `catalog` are not owned
  // and must outlive the preparer.
  static StatusOr<std::unique_ptr<Preparer>> Create(PreparerOptions options, ClaimReader* reader,
                                                    const DeviceCatalog* catalog);

  // `call_deadline`: kubelet's for the whole call (its gRPC deadline); the claim read ends
  // answer_margin before it, and never takes longer than claim_read_timeout.
  StatusOr<std::vector<PreparedDevice>> Prepare(const ClaimRef& ref,
                                                std::optional<ClaimDeadline> call_deadline = std::nullopt);
  Status Unprepare(const ClaimRef& ref);

  // What the checkpoint holds now.
  ClaimMap Claims() const;

  // From now on, each claim prepared (read from the API server and written) is handed to
  // `reporter` (not owned; outlives the preparer), and each unprepared one taken from it: the
  // claim's status.devices entries (claim_status_reporter.h). Never fails a prepare. Call before
  // serving kubelet.
  void ReportStatusTo(ClaimStatusReporter* reporter) { reporter_ = reporter; }

 private:
  Preparer(PreparerOptions options, ClaimReader* reader, const DeviceCatalog* catalog,
           ClaimMap claims);
  StatusOr<PreparedClaim> Build(const ClaimRef& ref, const ResourceClaim& claim,
                                std::string& cdi_spec) const;
  Status RemoveFromNode(const PreparedClaim& claim, const std::vector<std::string>& keep_pods);
  // Under mu_: the checkpoint's answer for a prepared claim (nullopt when it must be read).
  StatusOr<std::optional<std::vector<PreparedDevice>>> AnsweredFromCheckpoint(const ClaimRef& ref) const;
  ClaimDeadline ReadDeadline(std::optional<ClaimDeadline> call_deadline) const;
  // Under mu_: one read of `uid` ended; whether the claim was unprepared since it started.
  bool EndRead(const std::string& uid, uint64_t read_started);

  const PreparerOptions options_;
  ClaimReader* reader_;
  const DeviceCatalog* catalog_;
  const Checkpoint checkpoint_;
  mutable std::mutex mu_;
  ClaimMap claims_;                                   // guarded by mu_
  std::map<std::string, int> reads_in_flight_;        // claim UID -> API reads running; mu_
  std::map<std::string, uint64_t> unprepared_at_;     // claim UID -> unprepares_ then; mu_
  uint64_t unprepares_ = 0;                           // unprepares during reads; mu_
  ClaimStatusReporter* reporter_ = nullptr;
};

}  // namespace rdmak8s::dra
