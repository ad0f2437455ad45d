// The DRAPlugin gRPC service kubelet calls, in both versions it speaks: v1 (Kubernetes 1.34+)
// and v1beta1 (1.32, 1.33). The messages of the two are identical; each service answers every
// claim of a request through the same Preparer, one entry per claim UID (a failed claim carries
// its error, never a gRPC error, so kubelet keeps the other claims' answers). Each claim failure
// is logged once, here.
#pragma once

#include <memory>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "dra/preparer.h"

namespace rdmak8s::dra {

// Names a plugin announces in PluginInfo.supported_versions for each service it serves
// (kubelet's dra/v1 and dra/v1beta1 DRAPluginService, dra-health/v1alpha1
// DRAResourceHealthService). Kubelet picks the first DRAPlugin name it knows, so v1 goes first.
inline constexpr char kDraPluginV1[] = "v1.DRAPlugin";
inline constexpr char kDraPluginV1beta1[] = "v1beta1.DRAPlugin";
inline constexpr char kDraResourceHealthV1alpha1[] = "v1alpha1.DRAResourceHealth";

// `preparer` is not owned and must outlive the services.
std::unique_ptr<grpc::Service> NewDraServiceV1(Preparer* preparer);
std::unique_ptr<grpc::Service> NewDraServiceV1beta1(Preparer* preparer);

}  // namespace rdmak8s::dra
