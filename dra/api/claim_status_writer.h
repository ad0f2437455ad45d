// The API server's side of dra::ClaimStatusWriter (dra/claim_status_writer.h): read, change our
// entries, write back with the resourceVersion read.
//
//   GET /apis/resource.k8s.io/<version>/namespaces/<ns>/resourceclaims/<name>
//   PUT .../resourceclaims/<name>/status   the object read, status.devices = the other drivers'
//                                          entries as read (in order) + ours
// A 409 (another writer: a second DRA driver on the claim, the scheduler, kubelet) re-reads and
// tries again, at most kMaxAttempts in all: the other writer's entries are never overwritten,
// since each attempt starts from what the server holds. A 403 is kPermissionDenied naming the
// RBAC the update needs (DRAResourceClaimGranularStatusAuthorization: besides
// resourceclaims/status update, resourceclaims/driver with our driver name as resourceName and
// verb associated-node:update; manifests/components/dra-driver/rbac.yaml grants it).
//
// Memory: answers are bounded as the claim reader's (kMaxObjectBytes, json_reader's depth).
// Thread safety: Update may be called from several threads if the KubeApi allows it (ours does).
#pragma once

#include <string>

#include "dra/api/api_version.h"
#include "dra/api/kube_client.h"
#include "dra/claim_status_writer.h"

namespace rdmak8s::dra {

class ApiClaimStatusWriter final : public ClaimStatusWriter {
 public:
  static constexpr int kMaxAttempts = 5;

  // `api` and `versions` are not owned and must outlive the writer.
  ApiClaimStatusWriter(KubeApi* api, ApiVersionSource* versions, std::string driver)
      : api_(api), versions_(versions), driver_(std::move(driver)) {}

  Status Update(const std::string& namespace_name, const std::string& name, const std::string& uid,
                const StatusEntriesFn& build, ClaimDeadline deadline) override;

 private:
  KubeApi* api_;
  ApiVersionSource* versions_;
  const std::string driver_;
};

// The RBAC a 403 on a status update of `driver`'s entries says is missing (for logs).
std::string MissingStatusRbac(const std::string& driver);

}  // namespace rdmak8s::dra
