// Preparer: what NodePrepareResources and NodeUnprepareResources do for one claim, whichever
// API version kubelet called (dra_service.h adapts both to this).
//
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
//   - write-ahead: the claim is checkpointed kPreparing, then its CDI spec
//     (claim_cdi_spec.h) and one pod record per reserved pod (rdmak8s/pod_devices.h) are
//     written, then it is checkpointed kPrepared. A failure at any step leaves what is on disk
//     for a retry of Prepare (which redoes every step) or for Unprepare to remove.
//   Returns the devices kubelet gets, with their CDI device IDs.
// Unprepare(ref): removes the claim's CDI spec and pod records and forgets it. A claim the
//   checkpoint does not know is success (its spec file, if one was left, is still removed): an
//   unprepare may run twice, and after a restart that lost nothing there is nothing to undo.
//
// Thread safety: Prepare and Unprepare may be called from any thread; claims are handled one at
// a time (file writes are short; the API read is the only wait).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string_view>
#include <string>
#include <vector>

#include "dra/checkpoint.h"
#include "dra/claim_reader.h"
#include "dra/device_catalog.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dra {

// The opaque options a ResourceClaim may set itself: env that names the devices it got. The rest
// (issm, roceUmad, env) reach the subnet manager, raw MADs or every process of the pod and are
// the admin's, set in a DeviceClass.
inline constexpr std::array<std::string_view, 2> kClaimSettableOptions = {"ncclEnv", "ucxEnv"};

struct PreparerOptions {
  std::string driver_name = "rdma.rdmak8s.io";
  std::string state_dir = "/var/lib/rdmak8s/dra";
  std::string cdi_dir = "/var/run/cdi";
  std::string dev_root = "/dev";             // host paths of char devices in CDI specs
  std::string pod_devices_dir = "/run/rdmak8s/dra-pods";  // pod_devices.h records for the CNI
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

  StatusOr<std::vector<PreparedDevice>> Prepare(const ClaimRef& ref);
  Status Unprepare(const ClaimRef& ref);

  // What the checkpoint holds now.
  ClaimMap Claims() const;

 private:
  Preparer(PreparerOptions options, ClaimReader* reader, const DeviceCatalog* catalog,
           ClaimMap claims);
  StatusOr<PreparedClaim> Build(const ClaimRef& ref, const ResourceClaim& claim,
                                std::string& cdi_spec) const;
  Status RemoveFromNode(const PreparedClaim& claim, const std::vector<std::string>& keep_pods);

  const PreparerOptions options_;
  ClaimReader* reader_;
  const DeviceCatalog* catalog_;
  const Checkpoint checkpoint_;
  mutable std::mutex mu_;
  ClaimMap claims_;
};

}  // namespace rdmak8s::dra
