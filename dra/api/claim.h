// A ResourceClaim as the kubelet side of the driver needs it (NodePrepareResources): which
// devices our driver was given, for which requests, the pods it is reserved for and the opaque
// configuration for our driver. Values only.
//
// Read from resource.k8s.io ResourceClaim (v1 and v1beta1 share these fields):
//   metadata.{namespace,name,uid}
//   status.allocation.devices.results[] = {request, driver, pool, device}
//   status.allocation.devices.config[]  = {requests[], opaque: {driver, parameters}}
//   status.reservedFor[]                = {resource: "pods", name, uid}
#pragma once

#include <map>
#include <string>
#include <vector>

namespace rdmak8s::dra {

struct AllocatedDevice {
  std::string request;  // "nic", or "nic/<subrequest>" for a request with alternatives
  std::string driver;
  std::string pool;
  std::string device;  // the published device name (slice_devices.h SliceDeviceName)
  friend bool operator==(const AllocatedDevice&, const AllocatedDevice&) = default;
};

struct ResourceClaimView {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::vector<AllocatedDevice> results;  // our driver's only, in the claim's order
  std::vector<std::string> reserved_for_pod_uids;
  // Request (as in `results`) -> a JSON array of the `parameters` objects of every opaque
  // config for our driver that applies to it (a config naming no requests applies to all; one
  // naming "nic" applies to "nic/<sub>"), in the claim's order (class configs first).
  std::map<std::string, std::string> opaque_config;
};

}  // namespace rdmak8s::dra
