// FakeAllocator: the FakeApiServer's stand-in for kube-scheduler's DRA allocation: it allocates
// the stored ResourceClaims that have no status.allocation from the stored ResourceSlices, and
// holds an allocated claim as "not bound" while a device's binding conditions are not all True.
//
// What it does as the v1.36 scheduler does (KEP-4381 structured parameters, KEP-5055 device
// taints, KEP-5007 binding conditions):
//  - requests `exactly` (and v1beta1's flat request) and `firstAvailable` (subrequests in order,
//    the first that can be satisfied wins; the result names "<request>/<subrequest>"), count N
//    (allocationMode ExactCount, default 1) distinct devices per request;
//  - devices of the newest generation of complete pools only (all resourceSliceCount slices of
//    that generation present); every device of one claim on one node (slices with that nodeName,
//    or allNodes): the allocation's nodeSelector names the node as the scheduler writes it;
//  - a device allocated to another claim (any stored claim's status.allocation) is not taken;
//  - taints: a device with a taint of effect NoSchedule or NoExecute is skipped unless the
//    request's tolerations tolerate it (DeviceToleration: an empty key with operator Exists
//    tolerates every taint; otherwise the key must match, operator Exists matches any value,
//    Equal (the default) the same value; an empty effect matches every effect). Effect None and
//    effects it does not know are ignored, as consumers must treat them;
//  - the result copies the request's tolerations and the device's bindingConditions and
//    bindingFailureConditions; with binding conditions the allocation gets allocationTimestamp;
//    the claim's spec.devices.config entries become allocation config with source FromClaim;
//  - binding: a claim whose results carry bindingConditions is bound only when each of them is
//    True in the claim's status.devices entry of that device; if any bindingFailureCondition is
//    True there, the allocation (and status.devices, as the server drops it on deallocation) is
//    undone, as the scheduler's unreserve does, and the claim is allocated again at once, never
//    from that device (this fake remembers it for the claim: the real scheduler remembers
//    nothing, the driver is expected to taint a device that cannot bind).
// What it cannot do, and therefore refuses (the claim stays unallocated, the reason says why)
// rather than allocating more kindly than the scheduler would: CEL. A DeviceClass is a fixed
// table (ShippedDeviceClasses: the classes of manifests/components/dra-driver/device-classes.yaml,
// each CEL expression read as "driver == D [&& attribute A == V]"; a test checks the table
// against the YAML); a request with its own `selectors`, allocationMode All, adminAccess,
// capacity requests, or a claim with `constraints`, is not allocated. Not done at all: pods
// (reservedFor is kept as written, never added), the binding timeout (600 s in the scheduler),
// shares of allowMultipleAllocations devices (such a device is taken whole, by one claim).
//
// What tests and the e2e read (the binding state has no API field; pods have none here): the
// claim annotation kBindingAnnotation: "pending" (not allocated; kBindingReasonAnnotation says
// why), "waiting" (allocated, a binding condition not True yet; the reason names the device and
// conditions), "bound"; and kAvoidedAnnotation: the "driver/pool/device"s given up after a
// binding failure, comma-separated. A claim allocated by hand (written with status.allocation)
// gets the binding annotation too, and is undone the same way on a failure condition.
//
// Thread safety: none; the FakeApiServer calls it under its lock.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rdmak8s::testing {

inline constexpr char kBindingAnnotation[] = "fake.rdmak8s.io/binding";
inline constexpr char kBindingReasonAnnotation[] = "fake.rdmak8s.io/binding-reason";
inline constexpr char kAvoidedAnnotation[] = "fake.rdmak8s.io/avoided-devices";

// A DeviceClass as the fake reads it: devices of `driver` (and, when `attribute` is set, whose
// attribute of that name in the driver's domain is the string `value`).
struct FakeDeviceClass {
  std::string driver;
  std::string attribute;
  std::string value;
};

// The shipped DeviceClasses (rdma, rdma-roce, rdma-ib, rdma-iwarp), by name.
const std::map<std::string, FakeDeviceClass>& ShippedDeviceClasses();

class FakeAllocator {
 public:
  explicit FakeAllocator(std::map<std::string, FakeDeviceClass> classes = ShippedDeviceClasses());

  // One scheduling pass. `slices`: name -> v1 ResourceSlice; `claims`: "ns/name" ->
  // ResourceClaim (v1 shape), changed in place. `now`: an RFC 3339 time for
  // allocationTimestamp. Returns the keys of the claims it changed (the caller moves their
  // resourceVersion on).
  std::vector<std::string> Run(const std::map<std::string, nlohmann::json>& slices,
                               std::map<std::string, nlohmann::json>& claims, const std::string& now);

 private:
  std::map<std::string, FakeDeviceClass> classes_;
};

}  // namespace rdmak8s::testing
