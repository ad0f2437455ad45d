// The API server's side of dra::ClaimReader (dra/claim_reader.h): GET
// /apis/resource.k8s.io/<version>/namespaces/<ns>/resourceclaims/<name>, decoded into the one
// claim model the preparer uses (dra::ResourceClaim). Every read goes to the server: a cached
// claim could be a deleted claim's namesake, and the preparer compares the UID kubelet sent.
//
// Decoded, for resource.k8s.io v1 and v1beta1 (and v1beta2): the status fields below have the
// same names and shapes in each (k8s.io/api/resource/{v1,v1beta1,v1beta2}/types.go); the spec,
// where the versions differ, is not read.
//   metadata.{namespace,name,uid}
//   status.allocation (set: allocated)
//   status.allocation.devices.results[] = {request, driver, pool, device}   (every driver's)
//   status.allocation.devices.config[]  = {source, requests[], opaque: {driver, parameters}}
//                                          (entries without `opaque` are not ours to read)
//   status.reservedFor[]                = {apiGroup, resource, name, uid}
//
// Memory: an answer past kMaxObjectBytes is refused unread, only the fields above are built
// from it (labels, annotations, managedFields and spec are skipped while parsing), and at most
// kMaxConcurrentReads reads are in flight: a tenant's large claims cost a bounded amount.
//
// Thread safety: GetClaim may be called from several threads if the KubeApi allows it (ours
// does); past kMaxConcurrentReads the others wait for a slot, each until its deadline.
#pragma once

#include <semaphore>
#include <string>
#include <string_view>

#include "dra/api/api_version.h"
#include "dra/api/kube_client.h"
#include "dra/api/resource_slice.h"
#include "dra/claim_reader.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

class ApiClaimReader final : public ClaimReader {
 public:
  // Claim reads whose answers may be in memory at once.
  static constexpr std::ptrdiff_t kMaxConcurrentReads = 4;

  // `api` is not owned and must outlive the reader; `version` is the one discovery chose.
  ApiClaimReader(KubeApi* api, ResourceApiVersion version) : api_(api), version_(version) {}
  // The version asked of `versions` (not owned) at each read until it is known: while the
  // server is unreachable GetClaim fails kUnavailable naming the cause.
  ApiClaimReader(KubeApi* api, ApiVersionSource* versions) : api_(api), versions_(versions) {}

  // kNotFound when the server has no such claim; kUnavailable naming the claim when no answer
  // came (connection, TLS, token file, retries of 429/5xx ran out); kPermissionDenied for
  // 401/403; kInvalidArgument naming the claim and the field when the answer is not a
  // ResourceClaim (or larger than kMaxObjectBytes, or nested past json_reader::kMaxDepth);
  // kDeadlineExceeded when no read slot freed by `deadline`. The UID and the allocation are not
  // checked here (the preparer does). A 404 of the claim leaves the API version cached; a 404
  // of the version's path (IsVersionNotFound) makes the next read discover it again.
  // kInvalidArgument, before any request, for a namespace or name CheckClaimName refuses;
  // both are percent-encoded into the path. The read (retries included) ends by `deadline`.
  StatusOr<ResourceClaim> GetClaim(const std::string& namespace_name, const std::string& name,
                                   ClaimDeadline deadline) override;

 private:
  KubeApi* api_;
  const ResourceApiVersion version_ = ResourceApiVersion::kV1;
  ApiVersionSource* const versions_ = nullptr;
  std::counting_semaphore<kMaxConcurrentReads> slots_{kMaxConcurrentReads};
};

// The pure part of GetClaim: a ResourceClaim object's JSON text as the claim model.
// InvalidArgument naming the field ("status.allocation.devices.results[1].driver: not a
// string") when it is not a ResourceClaim of a version we read.
StatusOr<ResourceClaim> ParseResourceClaim(std::string_view json_text);

}  // namespace rdmak8s::dra
