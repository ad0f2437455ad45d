// Which of the RDMA devices a pod holds through DRA claims an attachment takes, when the netconf
// has no deviceID: the pod's records, as the DRA driver wrote them at prepare
// (rdmak8s/records/pod_devices.h), and the netconf's draRequest. Pure code over values; the
// reading, with its trust checks, is ReadPodClaimRecords's (cni/device_resolver.h calls both).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/records/pod_devices.h"

namespace rdmak8s::cni {

// The device an attachment takes, and where it came from (for logs and errors).
struct DraChoice {
  std::string rdma_dev;  // "mlx5_1": what the CNI resolves, as it would a deviceID
  std::string bus_id;
  std::string claim;     // "<namespace>/<name>" of the ResourceClaim
  std::string request;   // the claim's request ("<request>/<subrequest>" for a prioritized list)
  friend bool operator==(const DraChoice&, const DraChoice&) = default;
};

// Whether `s` can be a netconf draRequest: one to three parts separated by '/', each of
// [a-z0-9.-] starting and ending with [a-z0-9] (DNS labels and subdomains: request, subrequest
// and claim names), at most 253 characters in all.
bool ValidDraRequest(std::string_view s);

// The device of `records` (the records of pod `pod_uid`, which messages name) an attachment
// takes. A device counts once it was prepared (its rdma_dev is set); the same RDMA device in
// several claims (a shared device) counts once.
//  - Every record must be of a claim of `pod_namespace` (K8S_POD_NAMESPACE): Kubernetes lets a
//    pod use only its own namespace's claims, so a record of another namespace is refused
//    (kPermissionDenied naming both namespaces and the claim), as is an empty `pod_namespace`
//    (kInvalidArgument: it cannot be checked).
//  - `request` empty: the only device. kNotFound when there is none; kInvalidArgument listing
//    the candidates ("<claim>/<request> (<rdma_dev>)") when there are several, saying the
//    netconf must name one with draRequest.
//  - `request` set: the devices whose request is `request`, or whose request is
//    "<request>/<subrequest>" (a prioritized-list allocation), or whose "<claim name>/<request>"
//    is `request` (a claim made by name: a template's claims have generated names). kNotFound
//    listing the candidates when none matches; kInvalidArgument listing the matches when
//    several do.
StatusOr<DraChoice> PickDraDevice(const std::vector<PodClaimRecord>& records,
                                  const std::string& pod_uid, const std::string& pod_namespace,
                                  const std::string& request);

// The claim of `records` (pod `pod_uid`'s) that holds the prepared RDMA device `rdma_dev`: what
// lets a netconf deviceID name a device on a DRA node. nullopt when none does. The namespace
// checks of PickDraDevice come first and fail the same way: a record of a claim of another
// namespace than `pod_namespace` is kPermissionDenied, an empty `pod_namespace` with records
// kInvalidArgument.
StatusOr<std::optional<DraChoice>> DraClaimHolding(const std::vector<PodClaimRecord>& records,
                                                   const std::string& pod_uid,
                                                   const std::string& pod_namespace,
                                                   const std::string& rdma_dev);

}  // namespace rdmak8s::cni
