// SliceWatch: a watch on this node's ResourceSlices of this driver (GET .../resourceslices?
// watch=true&fieldSelector=spec.nodeName=<node>,spec.driver=<driver>), so the slice loop
// (slice_sync.h) learns at once when someone else deletes or edits them: kubelet at its start
// deletes every slice of its node, and 30 s after a driver's socket goes, that driver's; the
// garbage collector deletes slices whose owner Node UID is stale.
//
// Kubernetes watch semantics (API concepts, "Efficient detection of changes"): without a
// resourceVersion the watch starts at the most recent one and first sends the current objects
// as ADDED events; with one, the changes after it. A resourceVersion too old for the server is
// 410 Gone, either as the HTTP status or as an ERROR event whose object is a Status with code
// 410: the caller then starts again without one (a relist). BOOKMARK events (asked for) carry
// only a resourceVersion. The server ends each watch after timeoutSeconds.
//
// Every event is decoded through checked reads: a malformed one ends the watch with an error
// naming its path ("watch event 3: $.object.metadata: not an object (string)").
//
// Thread safety: WatchOnce may run on its own thread while the publisher runs on another; it
// shares only the ApiVersionSource (thread safe) and the KubeApi (whose Stream does not hold up
// Send).
#pragma once

#include <functional>
#include <string>

#include "dra/api/api_version.h"
#include "dra/api/kube_client.h"
#include "dra/api/resource_slice.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

struct SliceEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark };
  Type type = Type::kAdded;
  std::string resource_version;  // the event's (metadata.resourceVersion of its object)
  ResourceSlice slice;           // not for kBookmark
};

class SliceWatch {
 public:
  // `api` and `versions` are not owned and must outlive the watch.
  SliceWatch(KubeApi* api, ApiVersionSource* versions, std::string driver, std::string node_name);

  // One watch from *resource_version ("" : from now, current objects first), each event handed
  // to `on_event`, until the server ends it (OK), `cancelled()` turns true (OK), or an error:
  // kFailedPrecondition for 410 Gone (start again from ""), kNotFound for a 404 (the version is
  // gone: forgotten in the ApiVersionSource), the server's other errors (ApiError), a malformed
  // event (kInvalidArgument naming its path). *resource_version follows the events: where the
  // next watch starts. *events counts the events handed on.
  Status WatchOnce(std::string* resource_version, int timeout_seconds,
                   const std::function<void(const SliceEvent&)>& on_event,
                   const std::function<bool()>& cancelled, int* events = nullptr);

 private:
  KubeApi* api_;
  ApiVersionSource* versions_;
  const std::string driver_;
  const std::string node_name_;
};

}  // namespace rdmak8s::dra
