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
//     options (ncclEnv, ucxEnv, issm, roceUmad, env); a bad one fails the claim naming it;
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

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dra/checkpoint.h"
#include "dra/claim_reader.h"
#include "dra/device_catalog.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dra {

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
