// What kube-apiserver v1.36 checks on a ResourceClaim status update's status.devices (KEP-4817),
// for the FakeApiServer: validation as pkg/apis/resource/validation's
// validateResourceClaimStatusUpdate / validateDeviceStatus / validateNetworkDeviceData, and the
// DRAResourceClaimGranularStatusAuthorization rule (a change to a driver's entries needs
// resourceclaims/driver for that driver's name). Written from the published rules, not from the
// driver's code: a stand-in that shares the product's checks cannot catch its mistakes.
//
// Pure code over JSON values (v1 shapes). Thread safety: free functions.
#pragma once

#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace rdmak8s::testing {

// An answer the server gives instead of storing the update.
struct ClaimStatusRefusal {
  int code = 0;            // 403 Forbidden, 422 Invalid
  std::string reason;      // "Forbidden" | "Invalid"
  std::string message;
};

// `old_claim`, `new_claim`: the stored object and the PUT body. `granted`: the driver names the
// caller's token may change entries of (resourceclaims/driver, associated-node:update). Checks,
// in the real server's order: authorization of every driver whose entries changed (403
// `changing status.devices requires resource="resourceclaims/driver", verb="associated-node:update",
// resourceName="<driver>"`), then validation (422 naming every bad field):
//  - each entry's driver a DNS subdomain of at most 63, pool a pool name, device a DNS label,
//    shareID (when set) a UUID, and driver/pool/device[/shareID] an allocated device of the claim;
//  - one entry per driver/pool/device/shareID;
//  - at most 8 conditions, each metav1.Condition-valid (type a qualified name, status
//    True|False|Unknown, lastTransitionTime set, reason [A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])? of at
//    most 1024, message at most 32768, no type twice);
//  - data a JSON object of at most 10 KiB (10240 bytes as serialized);
//  - networkData.interfaceName at most 256, hardwareAddress at most 128, ips at most 16, unique,
//    each an address in canonical CIDR form ("10.9.8.7/24", "2001:db8::1/64");
//  - status.allocation and status.reservedFor unchanged (this fake's update only takes devices).
std::optional<ClaimStatusRefusal> CheckClaimStatusUpdate(const nlohmann::json& old_claim,
                                                         const nlohmann::json& new_claim,
                                                         const std::set<std::string>& granted);

}  // namespace rdmak8s::testing
