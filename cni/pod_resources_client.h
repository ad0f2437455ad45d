// ListPodResources: the one place the CNI talks to kubelet. It asks kubelet's pod-resources API
// (v1.PodResourcesLister/List, on the socket kubelet serves at
// /var/lib/kubelet/pod-resources/kubelet.sock) which device IDs each container of each pod holds:
// gRPC over HTTP/2 over the unix socket, spoken with libnghttp2 (HTTP/2 framing and HPACK) and the
// pure codec of cni/pod_resources_codec.h. The CNI links fully statically (cni/CMakeLists.txt),
// and libgrpc++ with its protobuf, abseil, c-ares, re2 and OpenSSL closure would grow it by
// megabytes for one unary call; libnghttp2.a has no dependency (docs/cni.md, "Which device a pod
// was given").
//
// List, not Get: Get is behind the KubeletPodResourcesGet feature gate, alpha (off) from 1.27 to
// 1.33; List is served by every kubelet we support.
//
// Thread safety: a free function with no shared state.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cni/pod_resources_codec.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::cni {

// Every pod kubelet lists on `socket_path`, with their containers' device-plugin device IDs,
// within `timeout` (the whole call: connect, request and answer; sent to kubelet as
// grpc-timeout too). Errors name the socket: kNotFound when no socket is there,
// kUnavailable when nothing accepts on it, kDeadlineExceeded when kubelet did not answer in
// time, kInvalidArgument when the answer breaks `bounds` or is not a well-formed List answer,
// and for a gRPC error status the code it maps to (NOT_FOUND, UNIMPLEMENTED, UNAVAILABLE,
// DEADLINE_EXCEEDED; kInternal for the others) naming kubelet's grpc-status and grpc-message.
StatusOr<std::vector<PodResourcesEntry>> ListPodResources(const std::string& socket_path,
                                                          std::chrono::milliseconds timeout,
                                                          const PodResourcesBounds& bounds = {});

}  // namespace rdmak8s::cni
