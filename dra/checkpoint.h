// The DRA driver's checkpoint: every claim it prepared or began to prepare, on disk, so that a
// driver restart (or a crash between two steps of a prepare) loses nothing: the restarted
// driver answers NodePrepareResources for a prepared claim from here, and can undo a claim
// whose prepare never finished when kubelet unprepares it.
//
// One JSON file per driver name, <state_dir>/checkpoint-<driver>.json (two drivers on one node
// may share a state directory), replaced atomically (WriteFileAtomic: temporary,
// fsync, rename, directory fsync) after every change; the state directory is private
// (EnsurePrivateDir). A record is written kPreparing BEFORE anything is put on the node (CDI
// spec, pod records), and kPrepared once all of it is there: the write-ahead rule.
//
// Thread safety: none; the Preparer serializes access.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

// One device of a prepared claim, as kubelet was told and as the node knows it.
struct PreparedDevice {
  std::string request;                  // the claim's request it serves
  std::string pool;
  std::string device;                   // DRA device name
  std::string rdma_dev;                 // "mlx5_0" at prepare time
  std::string bus_id;                   // PCI or auxiliary address; "" for a soft device
  std::vector<std::string> cdi_device_ids;
  friend bool operator==(const PreparedDevice&, const PreparedDevice&) = default;
};

enum class ClaimPhase { kPreparing, kPrepared };

struct PreparedClaim {
  std::string uid;
  std::string namespace_name;
  std::string name;
  ClaimPhase phase = ClaimPhase::kPreparing;
  std::vector<PreparedDevice> devices;
  std::vector<std::string> pod_uids;  // status.reservedFor pods, recorded for the CNI
  std::string cdi_spec_path;          // "" until a spec is written (a claim with no device of ours)
  friend bool operator==(const PreparedClaim&, const PreparedClaim&) = default;
};

// Claims by UID.
using ClaimMap = std::map<std::string, PreparedClaim>;

// Pure: the checkpoint document and back. Parse errors are kInvalidArgument naming the JSON
// path ("$.claims[1].uid: must be a string").
std::string SerializeCheckpoint(const ClaimMap& claims);
StatusOr<ClaimMap> ParseCheckpoint(std::string_view text);

class Checkpoint {
 public:
  // `driver_name` "" is the file every driver shared before (checkpoint.json).
  Checkpoint(std::string state_dir, std::string driver_name);

  // Makes the state directory private and reads the checkpoint; a missing file is an empty
  // checkpoint (first start), except that a checkpoint.json an older driver left is taken over
  // once: the claims in it whose CDI IDs are all of this driver's kind are saved as this
  // driver's checkpoint (the old file stays for another driver name to take its own). An
  // unreadable or corrupt file is an error: the driver must not start pretending it prepared
  // nothing.
  StatusOr<ClaimMap> Load() const;
  // Replaces the file with `claims`; on failure the file on disk is the previous one.
  Status Save(const ClaimMap& claims) const;

  std::string path() const;
  std::string legacy_path() const { return dir_ + "/checkpoint.json"; }

 private:
  std::string dir_;
  std::string driver_;
};

}  // namespace rdmak8s::dra
