// What a prepared claim's status.devices entry says about one device of ours (KEP-4817,
// resource.k8s.io AllocatedDeviceStatus): the device's RDMA facts from the catalog, and what the
// CNI learned attaching it to the pod (rdmak8s/records/attachment_facts.h). Pure code over values:
// the writer (claim_status_writer.h) and the loop that follows changes (claim_status_reporter.h)
// call it. docs/dra.md#claim-status shows an entry and lists the conditions and data keys.
//
// An entry: {driver, pool, device, shareID (a consumable-capacity share), conditions, data,
// networkData}. Conditions (metav1.Condition: type, status True|False|Unknown, reason,
// message, lastTransitionTime; at most 8):
//   PortActive  the device's port is ACTIVE and LinkUp (False: the port state and why; the
//               device gone from the node is False DeviceGone)
//   GidPresent  RoCE only: the RoCE v2 GID of the pod's address is in the port's GID table (the
//               CNI waited for it at ADD); Unknown until the CNI attached the device
//   QosApplied  the netconf's QoS settings were applied at ADD (True NoneRequested without
//               any); Unknown until the CNI attached the device
//   PKeyMember  InfiniBand only: the netconf's PKey is in the port's PKey table (True
//               NoPKeyRequested without one); Unknown until the CNI attached the device
//   Ready       PortActive is True and no other condition is False
// On a device published with binding conditions (an IB port waiting for the subnet manager,
// dra/binding_conditions.h), PortActive is also the binding condition the scheduler waits for,
// and one more condition may come:
//   PortActivationFailed  True (reason PortNotActive) when the port was not ACTIVE within the
//               binding timeout: the binding failure condition (the scheduler tries elsewhere)
// An Unknown condition stays so for a pod that uses the device without our CNI.
// lastTransitionTime is `now` when a condition's status changed from `previous`' (or is new),
// else `previous`' time: an entry built again from the same facts equals the one stored.
//
// data (at most kMaxStatusDataBytes serialized, well under the API's 10 KiB): rdmaDev,
// transport, port, portState, physState, uverbs, nodeGuid, pkeys (at most 32), netdev,
// numaNode, pcieRoot; once attached: podIPs, gid, gidIndex, interfaceName.
// networkData (once attached): interfaceName, ips (at most 16), hardwareAddress: of the first
// attachment (by file name) when a device has several.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/device_catalog.h"
#include "rdmak8s/records/attachment_facts.h"

namespace rdmak8s::dra {

inline constexpr char kConditionReady[] = "Ready";
inline constexpr char kConditionPortActive[] = "PortActive";
inline constexpr char kConditionGidPresent[] = "GidPresent";
inline constexpr char kConditionQosApplied[] = "QosApplied";
inline constexpr char kConditionPKeyMember[] = "PKeyMember";
inline constexpr char kConditionPortActivationFailed[] = "PortActivationFailed";
inline constexpr size_t kMaxStatusPkeys = 32;
inline constexpr size_t kMaxStatusDataBytes = 8192;

// One allocated device of ours, as the claim's status.allocation.devices.results names it.
struct AllocatedDevice {
  std::string request;
  std::string pool;
  std::string device;
  std::string share_id;  // "" unless a consumable-capacity share
  friend bool operator==(const AllocatedDevice&, const AllocatedDevice&) = default;
};

struct DeviceStatusInput {
  std::string driver;
  AllocatedDevice allocated;
  std::optional<CatalogDevice> found;          // nullopt: no longer on this node
  std::vector<AttachmentFacts> attachments;    // the CNI's, for this device
};

// The entry for `in`. `previous`: our entry for the same device as the server holds it (null
// when none); `now`: RFC 3339 UTC ("2026-12-05T02:11:00Z").
nlohmann::json BuildDeviceStatus(const DeviceStatusInput& in, const nlohmann::json& previous,
                                 const std::string& now);

// Our entry for `device` among `current` (the server's entries of this driver: a list), null when
// there is none: the one with its pool, device and shareID (the last, were there two; the API
// server keeps them unique). The one match rule: the status writers and the claim watch (its
// binding conditions) find a device's entry by it.
nlohmann::json EntryOf(const nlohmann::json& current, const AllocatedDevice& device);
// Where EntryOf's entry is in `current`; none when there is none.
std::optional<size_t> EntryIndexOf(const nlohmann::json& current, const AllocatedDevice& device);

// `unix_seconds` as RFC 3339 UTC, seconds precision (metav1.Time's wire form).
std::string Rfc3339(int64_t unix_seconds);

}  // namespace rdmak8s::dra
