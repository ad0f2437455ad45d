// The DRAPlugin gRPC service kubelet calls, in both versions it speaks: v1 (Kubernetes 1.34+)
// and v1beta1 (1.32, 1.33). The messages of the two are identical; each service answers every
// claim of a request through the same Preparer, one entry per claim UID (a failed claim carries
// its error, never a gRPC error, so kubelet keeps the other claims' answers). Each claim failure
// is logged once, here. Each device is answered with the request it serves as the claim names
// it: a `firstAvailable` result's request is "<request>/<subrequest>" ("nic/iwarp"), and kubelet
// gives a container that asks for `request: nic` only the devices whose request_names hold
// "nic" exactly (verified with kubelet v1.36), so the parent name is what goes back.
// With `metrics`, each claim's prepare (result and time) and unprepare is counted there.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "dra/metrics.h"
#include "dra/preparer.h"

namespace rdmak8s::dra {

// Names a plugin announces in PluginInfo.supported_versions for each service it serves
// (kubelet's dra/v1 and dra/v1beta1 DRAPluginService, dra-health/v1alpha1
// DRAResourceHealthService). Kubelet picks the first DRAPlugin name it knows, so v1 goes first.
inline constexpr char kDraPluginV1[] = "v1.DRAPlugin";
inline constexpr char kDraPluginV1beta1[] = "v1beta1.DRAPlugin";
inline constexpr char kDraResourceHealthV1alpha1[] = "v1alpha1.DRAResourceHealth";

// "nic" of "nic/iwarp" (and of "nic"): the name a container's claim reference uses. Pure.
std::string ParentRequestName(const std::string& request);

// `preparer` and `metrics` (may be null) are not owned and must outlive the services.
std::unique_ptr<grpc::Service> NewDraServiceV1(Preparer* preparer, DraMetrics* metrics = nullptr);
std::unique_ptr<grpc::Service> NewDraServiceV1beta1(Preparer* preparer, DraMetrics* metrics = nullptr);

}  // namespace rdmak8s::dra
