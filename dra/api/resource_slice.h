// ResourceSlice: what this node publishes to the API server, as values, and its JSON in the two
// API versions we speak (resource.k8s.io v1 and v1beta1).
//
// Shapes (k8s.io/api/resource/{v1,v1beta1}/types.go):
//   v1       spec.devices[] = {name, attributes, capacity, allowMultipleAllocations, taints,
//                              bindsToNode, bindingConditions, bindingFailureConditions}
//   v1beta1  spec.devices[] = {name, basic: {the same}}
// Everything else we use (metadata, spec.driver, spec.nodeName, spec.pool{name, generation,
// resourceSliceCount}) is the same in both.
//
// Limits the API server validates, enforced here so the server never has to reject a slice:
//   kMaxDevicesPerSlice (128; kMaxDevicesPerSliceWithTaints, 64, when any device has a taint),
//   kMaxAttributesAndCapacities (32 per device), attribute names (a C identifier of at most 32
//   characters, optionally "<DNS subdomain of at most 63>/" before it), string values of at most
//   64 characters, device names that are DNS labels (at most 63).
// Binding conditions (KEP-5007, pkg/apis/resource/validation validateDeviceBindingParameters):
//   at most kMaxBindingConditions of each list, each a label name (a qualified name), no
//   duplicates, no type in both lists, and either both lists set or neither; bindsToNode is
//   independent of them.
//
// Pure code: no I/O. Thread safety: values and free functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

enum class ResourceApiVersion { kV1, kV1beta1 };
// "v1", "v1beta1".
std::string_view ResourceApiVersionName(ResourceApiVersion v);

// The field selector of one pool's slices: this node's, of this driver (the publisher's list and
// the watch ask the same).
inline std::string PoolFieldSelector(std::string_view node_name, std::string_view driver) {
  return "spec.nodeName=" + std::string(node_name) + ",spec.driver=" + std::string(driver);
}

inline constexpr size_t kMaxDevicesPerSlice = 128;
inline constexpr size_t kMaxDevicesPerSliceWithTaints = 64;
inline constexpr size_t kMaxAttributesAndCapacities = 32;
inline constexpr size_t kMaxAttributeValueLength = 64;
inline constexpr size_t kMaxIdLength = 32;
inline constexpr size_t kMaxDomainLength = 63;
inline constexpr size_t kMaxDeviceTaints = 4;
inline constexpr size_t kMaxBindingConditions = 4;  // BindingConditionsMaxSize, and the failure list's

// One attribute value: the API's int, bool or string (we publish no semver values).
using AttributeValue = std::variant<int64_t, bool, std::string>;

// A capacity: a quantity, and for a consumable one (KEP-5075) the amount one request takes when
// it names none.
struct DeviceCapacity {
  std::string value;                   // "8"
  std::optional<std::string> request_default;
  friend bool operator==(const DeviceCapacity&, const DeviceCapacity&) = default;
};

// KEP-5055 device taint set by the driver.
struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;  // "NoSchedule" | "NoExecute" | "None"
  friend bool operator==(const DeviceTaint&, const DeviceTaint&) = default;
};

struct SliceDevice {
  std::string name;  // DNS label, unique in the pool
  // Names without a domain are in the driver's domain (the API's rule).
  std::map<std::string, AttributeValue> attributes;
  std::map<std::string, DeviceCapacity> capacity;
  bool allow_multiple_allocations = false;
  std::vector<DeviceTaint> taints;
  // KEP-5007: the scheduler binds a pod using this device only once every binding condition is
  // True in the claim's status.devices entry, and gives up (tries again elsewhere) when any
  // failure condition is True. Both set or both empty.
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  bool binds_to_node = false;  // the allocation is pinned to the node it was made for
  friend bool operator==(const SliceDevice&, const SliceDevice&) = default;
};

// One ResourceSlice object as we own it.
struct ResourceSlice {
  std::string name;              // metadata.name
  std::string resource_version;  // metadata.resourceVersion; empty for a new object
  // metadata.ownerReferences: the Node, so the garbage collector removes the slices of a
  // deleted node. Empty: none.
  std::string owner_node_uid;
  std::string driver;
  std::string node_name;
  std::string pool_name;
  int64_t pool_generation = 0;
  int64_t pool_slice_count = 1;
  std::vector<SliceDevice> devices;
};

// Whether `name` is a valid attribute or capacity name (see the limits above).
bool IsValidQualifiedName(std::string_view name);
// Whether `name` is a DNS label (RFC 1123: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63).
bool IsDnsLabel(std::string_view name);

// How many devices one slice of `devices` may hold: 64 when any device has taints, else 128.
size_t MaxDevicesPerSlice(const std::vector<SliceDevice>& devices);

// Splits a pool's devices (in the order given) into slices named "<name_prefix>-<i>", each
// within MaxDevicesPerSlice, with pool name, generation and resourceSliceCount set on all.
// An empty pool is one empty slice: it tells the scheduler the node has no devices right now.
std::vector<ResourceSlice> SplitPool(const std::vector<SliceDevice>& devices,
                                     const std::string& name_prefix, const std::string& driver,
                                     const std::string& node_name, int64_t generation);

// The object JSON for a create or update in `version` (apiVersion, kind, metadata, spec).
nlohmann::json EncodeResourceSlice(const ResourceSlice& slice, ResourceApiVersion version);

// Reads a slice the server returned (an item of a list, a get, a create's answer, a watch
// event's object). InvalidArgument naming the field's path from `path` ("$" for a whole answer:
// "decode ResourceSlice: $.spec.devices[2].name: not a string (number)") when the JSON is not a
// ResourceSlice of `version`'s shape; never throws.
StatusOr<ResourceSlice> DecodeResourceSlice(const nlohmann::json& object,
                                            ResourceApiVersion version);
StatusOr<ResourceSlice> DecodeResourceSliceAt(const nlohmann::json& object, const std::string& path,
                                              ResourceApiVersion version);

}  // namespace rdmak8s::dra
