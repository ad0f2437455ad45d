// The bytes of kubelet's pod-resources API (k8s.io/kubelet/pkg/apis/podresources/v1, api.proto,
// service v1.PodResourcesLister) that the CNI exchanges: the gRPC message frame
// (grpc/doc/PROTOCOL-HTTP2.md, "Length-Prefixed-Message") and the protobuf wire format of
// ListPodResourcesRequest (empty) and ListPodResourcesResponse. Pure code over bytes; the one
// place that talks to kubelet is cni/pod_resources_client.h.
//
// The answer is kubelet's, about every pod of the node: it is bounded here (PodResourcesBounds)
// whatever it says. Fields the CNI does not need (cpu_ids, memory, dynamic_resources,
// topology) are skipped by their wire type, as a protobuf reader skips unknown fields.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s::cni {

// ContainerDevices: the IDs a device plugin gave one container for one resource.
struct PodResourceDevices {
  std::string resource_name;            // field 1
  std::vector<std::string> device_ids;  // field 2
  friend bool operator==(const PodResourceDevices&, const PodResourceDevices&) = default;
};

// ContainerResources, with only its device-plugin devices.
struct PodResourceContainer {
  std::string name;                          // field 1
  std::vector<PodResourceDevices> devices;   // field 2
  friend bool operator==(const PodResourceContainer&, const PodResourceContainer&) = default;
};

// PodResources.
struct PodResourcesEntry {
  std::string name;                              // field 1
  std::string pod_namespace;                     // field 2 ("namespace")
  std::vector<PodResourceContainer> containers;  // field 3
  friend bool operator==(const PodResourcesEntry&, const PodResourcesEntry&) = default;
};

// What a List answer may hold before it is refused. kubelet's own limit is the node's maxPods
// (110 by default); the defaults leave room for the largest nodes and stop a broken or hostile
// answer from costing the ADD more than a few megabytes.
struct PodResourcesBounds {
  size_t max_message_bytes = 16 << 20;  // one gRPC message (what multus's client accepts)
  size_t max_pods = 4096;
  size_t max_containers = 1024;         // per pod
  size_t max_device_ids = 1 << 16;      // in the whole answer
  size_t max_string_bytes = 1024;       // a name, namespace, resource name or device ID
};

// The gRPC frame of one uncompressed message: flag 0, 4-byte big-endian length, the message.
std::string EncodeGrpcMessage(std::string_view message);
// The message of a response body made of exactly one uncompressed frame. kInvalidArgument when
// the body is not one whole frame, is compressed (flag 1: we never asked for compression), or
// says its message is longer than `max_bytes`.
StatusOr<std::string_view> DecodeGrpcMessage(std::string_view body, size_t max_bytes);

// ListPodResourcesRequest{}: no field.
std::string EncodeListPodResourcesRequest();
// The pods of a ListPodResourcesResponse. kInvalidArgument naming the field when the bytes are
// not a well-formed message (truncated, a wrong wire type for a known field, a group) or break a
// bound (naming the bound).
StatusOr<std::vector<PodResourcesEntry>> DecodeListPodResourcesResponse(
    std::string_view bytes, const PodResourcesBounds& bounds = {});

// Every device ID `pods` (a List answer) gives pod `pod_namespace`/`name`, of every container and
// resource, in order; nullopt when the answer has no such pod.
std::optional<std::vector<std::string>> PodDeviceIds(const std::vector<PodResourcesEntry>& pods,
                                                     const std::string& pod_namespace,
                                                     const std::string& name);

}  // namespace rdmak8s::cni
