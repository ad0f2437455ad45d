// ClaimWatch: the ResourceClaims of every namespace that hold a pod at binding on a device of
// this node's pool (KEP-5007), for the BindingConditionSetter (dra/binding_conditions.h).
//
//   GET /apis/resource.k8s.io/<version>/resourceclaims?limit=100[&continue=...]   (list)
//   GET .../resourceclaims?watch=true&allowWatchBookmarks=true&resourceVersion=<rv>&timeoutSeconds=N
// No server-side filter selects claims by allocation, so every claim is read and most are
// dropped at once: a claim is handed on (HeldClaim::waiting not empty) only when one of its
// status.allocation.devices.results[] is of our driver and pool and carries bindingConditions
// (the scheduler copies them from the device) that our status.devices entry has not answered
// yet (not every binding condition True, no binding failure condition True). Every other
// claim is handed on with `waiting` empty, so the setter lets go of one it held.
//
// Memory: each answer is parsed keeping only the fields below (json_reader::KeepOnly: spec,
// labels, annotations, managedFields, opaque configs and data are skipped while parsing, never
// built); a list is read a page of at most kListPageSize claims at a time; nothing of a claim
// not handed on is kept.
//   metadata.{namespace,name,uid,resourceVersion}
//   status.allocation.devices.results[].{driver,pool,device,shareID,bindingConditions,
//                                        bindingFailureConditions}
//   status.devices[].{driver,pool,device,shareID,conditions[].{type,status}}
// The shapes are the same in v1, v1beta2 and v1beta1 (k8s.io/api/resource/*/types.go).
//
// Watch semantics as SliceWatch's (slice_watch.h): 410 Gone, as a status or an ERROR event, is
// kFailedPrecondition (list again); a malformed event ends the watch naming its path. A 404 is
// an error retried after the backoff; it does not make the ApiVersionSource forget the version
// (the publisher's and the claim reader's 404s do that), so a server that does not serve the
// collection costs one request per backoff, not a discovery each time.
//
// Thread safety: one ClaimWatch on one thread; it shares the KubeApi (whose Stream does not
// hold up Send) and the ApiVersionSource (thread safe).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "dra/api/api_version.h"
#include "dra/api/kube_client.h"
#include "dra/binding_conditions.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

class ClaimWatch {
 public:
  static constexpr int kListPageSize = 100;
  static constexpr std::chrono::seconds kListPageTimeout{20};

  // `api` and `versions` are not owned and must outlive the watch.
  ClaimWatch(KubeApi* api, ApiVersionSource* versions, std::string driver, std::string pool);

  // Every claim of every namespace, page by page, to `on_claim`; *resource_version is where a
  // watch goes on from. Errors name the request (ApiError) or the field of a malformed claim.
  Status List(std::string* resource_version, const std::function<void(const HeldClaim&)>& on_claim);

  // One watch from *resource_version until the server ends it or `cancelled()`; `deleted` is
  // true for a DELETED event. *resource_version follows the events.
  Status WatchOnce(std::string* resource_version, int timeout_seconds,
                   const std::function<void(bool deleted, const HeldClaim&)>& on_event,
                   const std::function<bool()>& cancelled);

  // List, then watch, and again, feeding `setter` (Seen; Gone on a deletion), until
  // `cancelled()`: 410 lists again at once, other errors are logged and retried after a
  // backoff (1 s doubling to 30 s, `sleep` waits it out and returns false to stop).
  void Run(BindingConditionSetter* setter, const std::function<bool()>& cancelled,
           const std::function<bool(std::chrono::milliseconds)>& sleep);

 private:
  std::string CollectionPath(ResourceApiVersion version) const;

  KubeApi* api_;
  ApiVersionSource* versions_;
  const std::string driver_;
  const std::string pool_;
};

// The pure part: one claim object (as kept by the watch's parse) at `path` as the setter needs
// it. kInvalidArgument naming the field when it is not a ResourceClaim.
StatusOr<HeldClaim> DecodeHeldClaim(const nlohmann::json& claim, const std::string& path,
                                    std::string_view driver, std::string_view pool);

}  // namespace rdmak8s::dra
