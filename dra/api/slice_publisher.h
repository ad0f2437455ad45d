// Publishes this node's RDMA devices as ResourceSlices and keeps them matching: the one place
// that writes ResourceSlices.
//
// The pool: driver = options.driver, nodeName = pool name = options.node_name, slices named
// "<node>-<driver>-<i>", owned by the Node object (ownerReferences). Publish diffs the desired
// slices against the server's (listed by fieldSelector spec.nodeName + spec.driver): nothing is
// written when they match; on any change the pool generation is bumped and every slice is
// updated (PUT with its resourceVersion), missing ones created, extra ones deleted.
//
// API version: resource.k8s.io/v1 when the server's discovery (GET /apis/resource.k8s.io) lists
// it, else v1beta1 (Kubernetes 1.32/1.33); Unimplemented when neither is served. Asked of an
// ApiVersionSource (api_version.h) at the first Publish or DeleteAll, not at construction.
// Features the server may not have (device taints, KEP-5055; consumable capacity, KEP-5075;
// binding conditions, KEP-5007) are
// learned from its answers: a server without the feature gate drops the field from the object
// it stores, so when the returned object lacks what we sent, the feature is off and the pool is
// rebuilt without it (unhealthy devices withdrawn; N named shares per device; a port waiting
// for the subnet manager tainted).
//
// Owner: the Node's UID is read before every pass that writes (and again after a 409 or 422
// answer, or an answer that kept another owner), so no write carries the UID of a Node that was
// deleted and re-created: the garbage collector deletes a slice whose owner UID is stale. A
// pass that finds the server's slices matching with a cached owner writes nothing; ForgetOwner
// (the slice loop's resync, a deletion seen by its watch) makes the next pass compare against
// the Node's current UID.
//
// A 404 for the collection (list or create) means the server no longer serves the version
// (upgraded from v1beta1 to v1 while the driver runs): the version is forgotten in the shared
// ApiVersionSource and Publish discovers it again and retries once, at once.
//
// Every answer is decoded through checked reads (rdmak8s/base/json_reader.h): a malformed one is an
// error naming the field's path, never an exception.
//
// Errors and retries: 409 on update -> re-get the object and retry with its resourceVersion
// (up to options.max_conflict_retries); 409 on create -> the object exists, update it; 410 Gone
// on a paged list -> relist from the start; 429/5xx are retried by the client. Any error leaves
// the server partly updated; the next Publish lists again and finishes the job.
//
// Thread safety: not thread safe; one owner (the driver's publish loop) calls it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <memory>

#include "dra/api/api_version.h"
#include "dra/api/kube_client.h"
#include "dra/api/resource_slice.h"
#include "dra/api/slice_devices.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

struct PublisherOptions {
  std::string driver;
  std::string node_name;
  int shares = 0;  // see SliceDeviceOptions
  std::string taint_effect = kDefaultTaintEffect;  // see SliceDeviceOptions
  int max_conflict_retries = 5;
  int max_relists = 3;
  int list_page_size = 100;  // `limit` of each list page
};

struct PublisherStats {
  int creates = 0, updates = 0, deletes = 0, conflicts = 0, relists = 0;
};

// What the server holds of the pool after the last successful Publish (zeros after DeleteAll).
struct PublishedCounts {
  int slices = 0;
  int devices = 0;
};

// The slices Publish would write for `devices` (generation and owner left for it to set): the
// pure part, also what `make bench` measures for 1,024 devices.
std::vector<ResourceSlice> DesiredSlices(const std::vector<DeviceInput>& devices,
                                         const PublisherOptions& options,
                                         const ServerFeatures& features,
                                         SliceDevicesResult* built = nullptr);

class SlicePublisher {
 public:
  // `api` and `versions` are not owned and must outlive the publisher. Without `versions` the
  // publisher discovers the version on its own.
  SlicePublisher(KubeApi* api, PublisherOptions options, ApiVersionSource* versions = nullptr);

  // Makes the server's slices of this pool say `devices`. Notes of BuildSliceDevices (attributes
  // or devices left out) are kept in last_notes() for the caller to log.
  Status Publish(const std::vector<DeviceInput>& devices);
  // Deletes every slice of this pool (uninstall). OK when there is none.
  Status DeleteAll();

  // Valid after a successful Publish (or DiscoverVersion). DiscoverVersion asks the
  // ApiVersionSource (api_version.h): errors as its Get.
  Status DiscoverVersion();
  // The next pass reads the Node's UID before comparing (see Owner above).
  void ForgetOwner() { node_uid_.reset(); }
  ApiVersionSource* versions() const { return versions_; }
  // The list's resourceVersion of the last Publish (where a watch of the changes since starts);
  // "" before one, or when the server sent none.
  const std::string& list_resource_version() const { return list_rv_; }
  const std::string& driver() const { return options_.driver; }
  const std::string& node_name() const { return options_.node_name; }
  ResourceApiVersion version() const { return version_.value_or(ResourceApiVersion::kV1); }
  const ServerFeatures& features() const { return features_; }
  const PublisherStats& stats() const { return stats_; }
  const PublishedCounts& published() const { return published_; }
  const std::vector<std::string>& last_notes() const { return notes_; }
  // The RDMA device a published device name stands for; nullopt when not published.
  std::optional<std::string> RdmaDevOf(std::string_view device_name) const;

 private:
  std::string CollectionPath() const;
  StatusOr<std::vector<ResourceSlice>> ListOurs();
  Status EnsureOwner();
  Status PublishWithVersion(const std::vector<DeviceInput>& devices);
  // The error for a 404 of the collection; forgets the version.
  Status VersionGone(const HttpRequest& req, const HttpResponse& resp, const std::string& action);
  // Writes `slice`; sets *stored to what the server kept.
  Status Write(ResourceSlice slice, bool exists, ResourceSlice* stored);
  Status PublishOnce(const std::vector<DeviceInput>& devices, bool* features_changed);

  KubeApi* api_;
  const PublisherOptions options_;
  const std::unique_ptr<ApiVersionSource> own_versions_;
  ApiVersionSource* const versions_;
  std::optional<ResourceApiVersion> version_;
  bool version_gone_ = false;  // VersionGone during this Publish / DeleteAll
  ServerFeatures features_;
  std::optional<std::string> node_uid_;
  std::optional<std::string> last_node_uid_;  // for the log line when it changes
  int64_t last_generation_ = 0;
  std::string list_rv_;
  PublisherStats stats_;
  PublishedCounts published_;
  std::vector<std::string> notes_;
  std::vector<std::pair<std::string, std::string>> rdma_dev_of_;
};

}  // namespace rdmak8s::dra
