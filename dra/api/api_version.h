// ApiVersionSource: which resource.k8s.io version the API server serves (v1, else v1beta1),
// asked of the server when first needed, not at start: the kubelet side serves (checkpointed
// claims, unprepare) while the server is still unreachable. The claim reader and the slice
// publisher share one; the slice loop (slice_sync.h), which retries its publish with backoff,
// is what keeps asking in the background until the server answers.
//
// Get(): the cached version once one discovery (GET /apis/resource.k8s.io) succeeded; else one
// discovery now: kUnavailable naming the server and the cause while it cannot be reached,
// kUnimplemented when it serves no resource.k8s.io or neither version (not cached: a cluster
// upgrade turns it on).
//
// Forget(v): a user of version v got 404 for a path of it (the server was upgraded from v1beta1
// to v1, or downgraded): the next Get discovers again. Each user calls it on a 404 of the
// collection, never of one named object (IsVersionNotFound tells the two apart).
//
// Get(deadline): the same, but neither the wait for another caller's discovery nor the
// discovery's own request goes past `deadline` (kDeadlineExceeded then): a claim read inside
// kubelet's call deadline must not hang behind a discovery the server does not answer.
//
// Thread safety: Get and Forget may be called from any thread. One discovery runs at a time
// (others wait for its outcome, each until its own deadline), and no lock is held across its
// request: Forget and a Get that finds the version cached never wait for the server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "dra/api/kube_client.h"
#include "dra/api/resource_slice.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

class ApiVersionSource {
 public:
  // `api` is not owned and must outlive the source.
  explicit ApiVersionSource(KubeApi* api) : api_(api) {}
  StatusOr<ResourceApiVersion> Get(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
  // Drops the cached version when it is still `seen` (true then); false when another user
  // already did, or the version moved on.
  bool Forget(ResourceApiVersion seen);

 private:
  // One discovery request: no lock held.
  StatusOr<ResourceApiVersion> Discover(std::optional<std::chrono::steady_clock::time_point> deadline);

  KubeApi* api_;
  std::mutex mu_;
  std::condition_variable discovered_;             // a discovery ended
  bool discovering_ = false;                       // guarded by mu_
  std::optional<ResourceApiVersion> version_;      // guarded by mu_
  std::optional<ResourceApiVersion> last_logged_;  // guarded by mu_
};

// True when a 404 `response` to a request for one object named `name` says the path itself is
// not served (a resource.k8s.io version gone), false when it says the object is missing. The
// API server's two 404 Status objects differ there: a missing object's names it
// (details.name, apierrors.NewNotFound), an unserved path's details are empty. A body that is
// not a Status (a proxy's) counts as the path's.
bool IsVersionNotFound(const HttpResponse& response, std::string_view name);

}  // namespace rdmak8s::dra
