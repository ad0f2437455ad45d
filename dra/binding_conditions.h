// BindingConditionSetter: answers the binding conditions (KEP-5007) of the devices this driver
// publishes while their InfiniBand port waits for the subnet manager (dra/api/slice_devices.h):
// in each claim allocated such a device, it sets PortActive=True in our status.devices entry
// once the device's port is ACTIVE, or PortActivationFailed=True when it is not after
// `timeout`, so the scheduler binds the pod or tries elsewhere.
//
// Why the driver must find these claims itself: the scheduler allocates the claim (and copies
// the device's bindingConditions into status.allocation.devices.results[]) and then waits in
// PreBind before the pod is bound; kubelet calls NodePrepareResources only after binding. So the
// claims come from a watch of every namespace's ResourceClaims (dra/api/claim_watch.h), which
// hands on only claims with a result of ours that carries binding conditions and whose entry
// does not yet settle them (ClaimWatch decodes that); Seen/Gone keep the set here.
//
// The entry written is the claim status entry of dra/claim_status.h (PortActive, Ready, the
// RDMA data), built from the catalog, plus PortActivationFailed=True (reason PortNotActive) on a
// timeout. It goes through the ClaimStatusWriter: only our entries change, a 409 is retried.
// The claim's allocation names our node, so associated-node authorization lets the DaemonSet's
// token write it.
//
// What drives it: Run() passes over the held claims at every change of the catalog (the device
// watch feeds it: a port going ACTIVE) and once a second (claims Seen meanwhile, timeouts).
// The clock is an option (tests set it). A claim first seen by this process starts its
// timeout then (a restarted driver gives a waiting port the full timeout again; the scheduler's
// own bindingTimeout, 600 s by default, bounds the total).
//
// Bounds: at most kMaxHeldClaims claims are held (one per allocation of a waiting device of
// this node; more is a broken scheduler or a flood): past it a claim is dropped and said.
//
// Thread safety: Seen, Gone, SyncOnce and held() from any thread; Run on one.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "dra/claim_status.h"
#include "dra/claim_status_writer.h"
#include "dra/device_catalog.h"

namespace rdmak8s::dra {

// The failure condition's reason when the timeout passed.
inline constexpr char kPortNotActiveReason[] = "PortNotActive";

// A claim holding a pod at binding on devices of ours.
struct HeldClaim {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::vector<AllocatedDevice> waiting;  // ours, with binding conditions not yet answered
  friend bool operator==(const HeldClaim&, const HeldClaim&) = default;
};

struct BindingConditionOptions {
  std::string driver_name = "rdma.rdmak8s.io";
  // How long a port may stay not ACTIVE before PortActivationFailed (--binding-timeout).
  std::chrono::seconds timeout{120};
  std::chrono::milliseconds write_timeout{10000};  // one claim's update, retries included
  std::function<std::chrono::steady_clock::time_point()> now;  // nullptr: steady_clock
  std::function<int64_t()> wall_now;                           // Unix seconds; nullptr: the clock
};

class BindingConditionSetter {
 public:
  static constexpr size_t kMaxHeldClaims = 4096;

  // `writer` and `catalog` are not owned and must outlive it.
  BindingConditionSetter(BindingConditionOptions options, ClaimStatusWriter* writer,
                         const DeviceCatalog* catalog);

  // The watch saw `claim` (with waiting devices): held from now on (its timeout starts at the
  // first Seen of its UID). A claim without waiting devices is let go.
  void Seen(const HeldClaim& claim);
  // The claim was deleted, deallocated, or its conditions were answered.
  void Gone(const std::string& uid);

  // One pass: each held claim whose waiting devices all have an ACTIVE port gets PortActive=True;
  // one past its timeout gets PortActivationFailed=True; either is then let go. A failed write
  // is logged and tried again at the next pass. Returns the writes that succeeded.
  int SyncOnce();

  // Passes until catalog->shut_down() (see the header comment for when).
  void Run();

  std::vector<HeldClaim> held() const;

 private:
  struct Held {
    HeldClaim claim;
    std::chrono::steady_clock::time_point since;
  };
  std::chrono::steady_clock::time_point Now() const;
  // Whether the catalog's device for `d` has a port ACTIVE.
  bool PortActive(const AllocatedDevice& d) const;
  Status Write(const HeldClaim& claim, bool failed);

  const BindingConditionOptions options_;
  ClaimStatusWriter* writer_;
  const DeviceCatalog* catalog_;
  mutable std::mutex mu_;
  std::map<std::string, Held> held_;  // by UID; guarded by mu_
};

}  // namespace rdmak8s::dra
