// ClaimReader: the seam between NodePrepareResources and the API server. Kubelet names a claim
// by namespace, name and UID only; what the driver must prepare is in the ResourceClaim object
// (resource.k8s.io/v1, also v1beta1 on older servers: the fields below are the same in both).
// The real implementation (an API-server client, dra/api/) and the tests' in-memory fake
// implement it; the preparer never talks HTTP.
//
// Thread safety: implementations must allow concurrent calls (kubelet may prepare claims of
// several pods at once).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::dra {

// status.allocation.devices.results[]: one allocated device.
struct DeviceResult {
  std::string request;  // the claim's request that got it ("nic", or "nic/subrequest")
  std::string driver;   // the DRA driver that prepares it: ours or another's
  std::string pool;
  std::string device;   // the device's name in its ResourceSlice
  friend bool operator==(const DeviceResult&, const DeviceResult&) = default;
};

// status.allocation.devices.config[].source: whose the entry is. A DeviceClass is the cluster
// admin's; a claim is any user's of its namespace (docs/trust.md).
inline constexpr char kFromClass[] = "FromClass";
inline constexpr char kFromClaim[] = "FromClaim";

// status.allocation.devices.config[] with an opaque entry: parameters a DeviceClass or the
// claim hands a driver.
struct OpaqueConfig {
  std::string source;                 // "FromClass" | "FromClaim"
  std::vector<std::string> requests;  // the requests it applies to; empty: every request
  std::string driver;                 // opaque.driver
  std::string parameters;             // opaque.parameters, as JSON text
  friend bool operator==(const OpaqueConfig&, const OpaqueConfig&) = default;
};

// status.reservedFor[]: who may use the claim. Pods are {resource: "pods", name, uid}.
struct ConsumerReference {
  std::string api_group;  // "" for pods
  std::string resource;   // "pods"
  std::string name;
  std::string uid;
  friend bool operator==(const ConsumerReference&, const ConsumerReference&) = default;
};

// What the preparer needs of one ResourceClaim.
struct ResourceClaim {
  std::string namespace_name;  // metadata.namespace
  std::string name;            // metadata.name
  std::string uid;             // metadata.uid
  bool allocated = false;      // status.allocation is set
  std::vector<DeviceResult> results;
  std::vector<OpaqueConfig> config;
  std::vector<ConsumerReference> reserved_for;
  friend bool operator==(const ResourceClaim&, const ResourceClaim&) = default;
};

// What a claim's namespace and name may be (k8s.io/apimachinery validation: a namespace is a
// DNS-1123 label, an object name a DNS-1123 subdomain). Kubelet's are untrusted input: they go
// into the API path, so anything else is refused before a request is made.
inline bool IsDns1123Label(std::string_view s) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return !s.empty() && s.size() <= 63 && alnum(s.front()) && alnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}
inline bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (;;) {
    const size_t dot = s.find('.');
    if (!IsDns1123Label(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}
// kInvalidArgument naming the field and its value (quoted) unless `namespace_name` is a DNS
// label and `name` a DNS subdomain.
inline Status CheckClaimName(const std::string& namespace_name, const std::string& name) {
  if (!IsDns1123Label(namespace_name)) {
    return InvalidArgumentError("claim namespace " + Quoted(namespace_name) +
                                " is not a DNS-1123 label ([a-z0-9-], at most 63)");
  }
  if (!IsDns1123Subdomain(name)) {
    return InvalidArgumentError("claim name " + Quoted(name) +
                                " is not a DNS-1123 subdomain ([a-z0-9-.], at most 253)");
  }
  return Status::Ok();
}

// When a claim read must have its answer (or give up).
using ClaimDeadline = std::chrono::steady_clock::time_point;

class ClaimReader {
 public:
  virtual ~ClaimReader() = default;
  // The current ResourceClaim `namespace_name`/`name`, read fresh (not from a cache that may
  // hold a deleted claim's namesake). kNotFound when the server has no such claim; kUnavailable
  // (or another code) when it could not be asked, naming the claim and the cause. The UID is
  // not checked here: the caller compares it with the one kubelet sent. Returns by `deadline`
  // (kDeadlineExceeded or kUnavailable when the server has not answered by then, retries
  // included); kInvalidArgument, before any request, for a name CheckClaimName refuses.
  virtual StatusOr<ResourceClaim> GetClaim(const std::string& namespace_name,
                                           const std::string& name, ClaimDeadline deadline) = 0;
};

}  // namespace rdmak8s::dra
