// Reads a ResourceClaim from the API server for NodePrepareResources: GET
// /apis/resource.k8s.io/<version>/namespaces/<ns>/resourceclaims/<name>, checked against the UID
// kubelet gave, reduced to our driver's part (claim.h).
//
// Thread safety: Read may be called from several threads if the KubeApi allows it (ours does).
#pragma once

#include <string>
#include <string_view>

#include "dra/api/claim.h"
#include "dra/api/kube_client.h"
#include "dra/api/resource_slice.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dra {

class ApiClaimReader {
 public:
  // `api` is not owned and must outlive the reader.
  ApiClaimReader(KubeApi* api, std::string driver, ResourceApiVersion version)
      : api_(api), driver_(std::move(driver)), version_(version) {}

  // NotFound when the claim does not exist; FailedPrecondition when its UID is not `uid` (a
  // claim deleted and re-created under the same name) or it is not allocated; InvalidArgument
  // when the answer is not a ResourceClaim; other API errors as ApiError says.
  StatusOr<ResourceClaimView> Read(std::string_view ns, std::string_view name, std::string_view uid);

 private:
  KubeApi* api_;
  const std::string driver_;
  const ResourceApiVersion version_;
};

// The pure part of Read: the view of a ResourceClaim JSON object for `driver`, with the same
// errors (the UID is checked unless `expected_uid` is empty, before the allocation is).
StatusOr<ResourceClaimView> ParseResourceClaim(std::string_view json_text, const std::string& driver,
                                               std::string_view expected_uid);

}  // namespace rdmak8s::dra
