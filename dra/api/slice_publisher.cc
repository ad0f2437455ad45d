#include "dra/api/slice_publisher.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

StatusOr<json> ParseBody(const KubeApi& api, const HttpRequest& req, const HttpResponse& resp) {
  return json_reader::Parse(resp.body, req.method + " " + api.server() + req.path);
}

// One page of a ResourceSliceList: its items (ours only: the field selector already filters;
// this guards against a server that ignores it) and its continue token, through checked reads.
Status DecodeListPage(const json& list, ResourceApiVersion version, const std::string& node,
                      const std::string& driver, std::vector<ResourceSlice>* out, std::string* cont,
                      std::string* resource_version) {
  RDMAK8S_ASSIGN_OR_RETURN(const json* items, json_reader::ArrayAt(list, "$", "items"));
  for (size_t i = 0; items && i < items->size(); ++i) {
    RDMAK8S_ASSIGN_OR_RETURN(ResourceSlice s, DecodeResourceSliceAt((*items)[i], json_reader::Index("$.items", i), version));
    if (s.node_name == node && s.driver == driver) out->push_back(std::move(s));
  }
  RDMAK8S_ASSIGN_OR_RETURN(const json* meta, json_reader::ObjectAt(list, "$", "metadata"));
  cont->clear();
  resource_version->clear();
  if (meta) {
    RDMAK8S_ASSIGN_OR_RETURN(*cont, json_reader::StringAt(*meta, "$.metadata", "continue"));
    RDMAK8S_ASSIGN_OR_RETURN(*resource_version, json_reader::StringAt(*meta, "$.metadata", "resourceVersion"));
  }
  return Status::Ok();
}

bool SameContent(const ResourceSlice& a, const ResourceSlice& b) {
  return a.name == b.name && a.driver == b.driver && a.node_name == b.node_name &&
         a.pool_name == b.pool_name && a.pool_slice_count == b.pool_slice_count &&
         a.owner_node_uid == b.owner_node_uid && a.devices == b.devices;
}

}  // namespace

std::vector<ResourceSlice> DesiredSlices(const std::vector<DeviceInput>& devices,
                                         const PublisherOptions& options,
                                         const ServerFeatures& features, SliceDevicesResult* built) {
  SliceDevicesResult local;
  SliceDevicesResult& b = built ? *built : local;
  b = BuildSliceDevices(devices, {options.driver, options.shares, options.taint_effect}, features);
  std::string prefix = options.node_name + "-" + options.driver;
  if (prefix.size() > 240) prefix.resize(240);
  return SplitPool(b.devices, prefix, options.driver, options.node_name, 0);
}

SlicePublisher::SlicePublisher(KubeApi* api, PublisherOptions options, ApiVersionSource* versions)
    : api_(api),
      options_(std::move(options)),
      own_versions_(versions ? nullptr : std::make_unique<ApiVersionSource>(api)),
      versions_(versions ? versions : own_versions_.get()) {}

Status SlicePublisher::DiscoverVersion() {
  RDMAK8S_ASSIGN_OR_RETURN(ResourceApiVersion v, versions_->Get());
  version_ = v;
  return Status::Ok();
}

std::string SlicePublisher::CollectionPath() const {
  return "/apis/resource.k8s.io/" + std::string(ResourceApiVersionName(version())) + "/resourceslices";
}

std::optional<std::string> SlicePublisher::RdmaDevOf(std::string_view device_name) const {
  auto it = std::lower_bound(rdma_dev_of_.begin(), rdma_dev_of_.end(), device_name,
                             [](const auto& p, std::string_view n) { return p.first < n; });
  if (it == rdma_dev_of_.end() || it->first != device_name) return std::nullopt;
  return it->second;
}

StatusOr<std::vector<ResourceSlice>> SlicePublisher::ListOurs() {
  const std::string selector = PoolFieldSelector(options_.node_name, options_.driver);
  for (int attempt = 0;; ++attempt) {
    std::vector<ResourceSlice> out;
    std::string cont;
    bool gone = false;
    bool first_page = true;
    do {
      HttpRequest req;
      req.path = CollectionPath() + "?fieldSelector=" + QueryValue(selector) +
                 "&limit=" + std::to_string(options_.list_page_size);
      if (!cont.empty()) req.path += "&continue=" + QueryValue(cont);
      RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Send(req));
      if (resp.status == kHttpGone) {
        gone = true;
        if (attempt >= options_.max_relists) return ApiError(*api_, req, resp).Prepend("list ResourceSlices");
        break;
      }
      if (resp.status == kHttpNotFound) return VersionGone(req, resp, "list ResourceSlices");
      if (resp.status != 200) return ApiError(*api_, req, resp).Prepend("list ResourceSlices");
      StatusOr<json> parsed = ParseBody(*api_, req, resp);
      if (!parsed.ok()) return parsed.status().Prepend("list ResourceSlices");
      const json& list = *parsed;
      std::string list_rv;
      RDMAK8S_RETURN_IF_ERROR_CTX(
          DecodeListPage(list, version(), options_.node_name, options_.driver, &out, &cont, &list_rv),
          "list ResourceSlices: " + req.method + " " + api_->server() + req.path);
      if (first_page) list_rv_ = list_rv;  // the list is consistent at its first page's version
      first_page = false;
    } while (!cont.empty());
    if (!gone) return out;
    ++stats_.relists;  // the continue token expired: the list is only consistent from the start
  }
}

Status SlicePublisher::EnsureOwner() {
  if (node_uid_) return Status::Ok();
  HttpRequest req{"GET", "/api/v1/nodes/" + options_.node_name, ""};
  RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Send(req));
  if (resp.status != 200) return ApiError(*api_, req, resp).Prepend("owner of ResourceSlices");
  RDMAK8S_ASSIGN_OR_RETURN(json node, ParseBody(*api_, req, resp));
  auto uid = [&]() -> StatusOr<std::string> {
    RDMAK8S_ASSIGN_OR_RETURN(const json* meta, json_reader::ObjectAt(node, "$", "metadata"));
    if (!meta) return InvalidArgumentError("$.metadata: missing");
    return json_reader::StringAt(*meta, "$.metadata", "uid", /*required=*/true);
  }();
  if (!uid.ok()) {
    return uid.status().Prepend("owner of ResourceSlices: " + req.method + " " + api_->server() + req.path);
  }
  if (uid->empty()) {
    return InvalidArgumentError("owner of ResourceSlices: " + req.method + " " + api_->server() + req.path +
                                ": $.metadata.uid: empty");
  }
  if (last_node_uid_ && *last_node_uid_ != *uid) {
    SPDLOG_WARN("Node {} has a new UID ({} -> {}): it was re-created; the ResourceSlices are "
                "owned by the new one", options_.node_name, *last_node_uid_, *uid);
  }
  node_uid_ = *uid;
  last_node_uid_ = *uid;
  return Status::Ok();
}

Status SlicePublisher::VersionGone(const HttpRequest& req, const HttpResponse& resp, const std::string& action) {
  // 404 for the collection itself: the server no longer serves this resource.k8s.io version
  // (upgraded or downgraded while we run). Discover again; Publish retries at once.
  if (version_) versions_->Forget(*version_);
  version_.reset();
  version_gone_ = true;
  return ApiError(*api_, req, resp).Prepend(action + " (resource.k8s.io version gone: discovering again)");
}

Status SlicePublisher::Write(ResourceSlice slice, bool exists, ResourceSlice* stored) {
  for (int attempt = 0;; ++attempt) {
    HttpRequest req;
    req.method = exists ? "PUT" : "POST";
    req.path = exists ? CollectionPath() + "/" + slice.name : CollectionPath();
    req.body = EncodeResourceSlice(slice, version()).dump();
    RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Send(req));
    if (resp.status == 200 || resp.status == 201) {
      RDMAK8S_ASSIGN_OR_RETURN(json obj, ParseBody(*api_, req, resp));
      RDMAK8S_ASSIGN_OR_RETURN(*stored, DecodeResourceSlice(obj, version()));
      if (stored->owner_node_uid != slice.owner_node_uid) node_uid_.reset();
      ++(exists ? stats_.updates : stats_.creates);
      return Status::Ok();
    }
    const bool retry = resp.status == kHttpConflict || (exists && resp.status == kHttpNotFound);
    if (!exists && resp.status == kHttpNotFound) return VersionGone(req, resp, "write ResourceSlice " + slice.name);
    if (!retry || attempt >= options_.max_conflict_retries) {
      // 404/409/422 can mean the owner changed under us (the Node re-created): read it again
      // before the next write.
      if (resp.status == kHttpConflict || resp.status == 422) node_uid_.reset();
      return ApiError(*api_, req, resp).Prepend("write ResourceSlice " + slice.name);
    }
    if (resp.status == kHttpNotFound) {  // deleted under us: create it
      exists = false;
      slice.resource_version.clear();
      continue;
    }
    // 409: someone else wrote it (or it exists after all): take its resourceVersion, retry.
    ++stats_.conflicts;
    HttpRequest get{"GET", CollectionPath() + "/" + slice.name, ""};
    RDMAK8S_ASSIGN_OR_RETURN(HttpResponse current, api_->Send(get));
    if (current.status == kHttpNotFound) {
      exists = false;
      slice.resource_version.clear();
      continue;
    }
    if (current.status != 200) return ApiError(*api_, get, current).Prepend("write ResourceSlice " + slice.name);
    RDMAK8S_ASSIGN_OR_RETURN(json obj, ParseBody(*api_, get, current));
    RDMAK8S_ASSIGN_OR_RETURN(ResourceSlice now, DecodeResourceSlice(obj, version()));
    slice.resource_version = now.resource_version;
    exists = true;
  }
}

Status SlicePublisher::PublishOnce(const std::vector<DeviceInput>& devices, bool* features_changed) {
  *features_changed = false;
  SliceDevicesResult built;
  std::vector<ResourceSlice> desired = DesiredSlices(devices, options_, features_, &built);
  notes_ = built.notes;
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<ResourceSlice> current, ListOurs());
  const bool owner_fresh = !node_uid_;
  RDMAK8S_RETURN_IF_ERROR(EnsureOwner());
  for (auto& s : desired) s.owner_node_uid = *node_uid_;

  int64_t server_gen = 0;
  for (const auto& s : current) server_gen = std::max(server_gen, s.pool_generation);
  auto find_current = [&](const std::string& name) -> const ResourceSlice* {
    for (const auto& s : current) if (s.name == name) return &s;
    return nullptr;
  };
  bool same = current.size() == desired.size();
  for (const auto& d : desired) {
    const ResourceSlice* c = find_current(d.name);
    same = same && c && c->pool_generation == server_gen && SameContent(*c, d);
  }
  rdma_dev_of_ = built.rdma_dev_of;
  PublishedCounts counts;
  counts.slices = static_cast<int>(desired.size());
  for (const auto& d : desired) counts.devices += static_cast<int>(d.devices.size());
  if (same) {
    last_generation_ = server_gen;
    published_ = counts;
    return Status::Ok();
  }

  // About to write: the owner is read again first, so no write carries the UID of a Node that
  // was deleted and re-created since (the garbage collector would delete the slice at once).
  if (!owner_fresh) {
    node_uid_.reset();
    RDMAK8S_RETURN_IF_ERROR(EnsureOwner());
    for (auto& s : desired) s.owner_node_uid = *node_uid_;
  }
  const int64_t generation = std::max(server_gen, last_generation_) + 1;
  for (ResourceSlice& d : desired) {
    d.pool_generation = generation;
    const ResourceSlice* c = find_current(d.name);
    if (c) d.resource_version = c->resource_version;
    ResourceSlice stored;
    RDMAK8S_RETURN_IF_ERROR(Write(d, c != nullptr, &stored));
    // A server without a feature gate drops the field it does not know.
    for (size_t i = 0; i < d.devices.size() && i < stored.devices.size(); ++i) {
      if (!d.devices[i].taints.empty() && stored.devices[i].taints.empty() && features_.device_taints) {
        features_.device_taints = false;
        *features_changed = true;
        // Said once: the feature stays off for this publisher's life.
        SPDLOG_WARN("ResourceSlices: the API server dropped the device taints sent with {} "
                    "(DRADeviceTaints off: Kubernetes 1.34/1.35 defaults): unusable devices are "
                    "withdrawn from the slices instead of tainted", d.devices[i].name);
      }
      if (!d.devices[i].binding_conditions.empty() && stored.devices[i].binding_conditions.empty() &&
          features_.binding_conditions) {
        features_.binding_conditions = false;
        *features_changed = true;
        SPDLOG_WARN("ResourceSlices: the API server dropped the binding conditions sent with {} "
                    "(DRADeviceBindingConditions off: Kubernetes 1.34/1.35 defaults): an InfiniBand "
                    "port waiting for the subnet manager is tainted instead", d.devices[i].name);
      }
      if (d.devices[i].allow_multiple_allocations && !stored.devices[i].allow_multiple_allocations &&
          features_.consumable_capacity) {
        features_.consumable_capacity = false;
        *features_changed = true;
        SPDLOG_WARN("ResourceSlices: the API server dropped the consumable capacity sent with {} "
                    "(DRAConsumableCapacity off): each function is published as named shares",
                    d.devices[i].name);
      }
    }
  }
  last_generation_ = generation;
  for (const auto& c : current) {
    bool wanted = std::any_of(desired.begin(), desired.end(), [&](const ResourceSlice& d) { return d.name == c.name; });
    if (wanted) continue;
    HttpRequest del{"DELETE", CollectionPath() + "/" + c.name, ""};
    RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Send(del));
    if (resp.status != 200 && resp.status != 202 && resp.status != kHttpNotFound) {
      return ApiError(*api_, del, resp).Prepend("delete ResourceSlice " + c.name);
    }
    ++stats_.deletes;
  }
  published_ = counts;
  return Status::Ok();
}

Status SlicePublisher::Publish(const std::vector<DeviceInput>& devices) {
  version_gone_ = false;
  Status s = PublishWithVersion(devices);
  if (!s.ok() && version_gone_) {
    // The version was found gone (404 for the collection): once more with the one the server
    // serves now.
    s = PublishWithVersion(devices);
  }
  return s;
}

Status SlicePublisher::PublishWithVersion(const std::vector<DeviceInput>& devices) {
  if (!version_) RDMAK8S_RETURN_IF_ERROR(DiscoverVersion());
  bool features_changed = false;
  RDMAK8S_RETURN_IF_ERROR(PublishOnce(devices, &features_changed));
  // At most twice more: each pass can only turn a feature off.
  for (int i = 0; i < 2 && features_changed; ++i) {
    RDMAK8S_RETURN_IF_ERROR(PublishOnce(devices, &features_changed));
  }
  return Status::Ok();
}

Status SlicePublisher::DeleteAll() {
  if (!version_) RDMAK8S_RETURN_IF_ERROR(DiscoverVersion());
  version_gone_ = false;
  StatusOr<std::vector<ResourceSlice>> listed = ListOurs();
  if (!listed.ok() && version_gone_) {
    RDMAK8S_RETURN_IF_ERROR(DiscoverVersion());
    listed = ListOurs();
  }
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<ResourceSlice> current, std::move(listed));
  for (const auto& c : current) {
    HttpRequest del{"DELETE", CollectionPath() + "/" + c.name, ""};
    RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Send(del));
    if (resp.status != 200 && resp.status != 202 && resp.status != kHttpNotFound) {
      return ApiError(*api_, del, resp).Prepend("delete ResourceSlice " + c.name);
    }
    ++stats_.deletes;
  }
  rdma_dev_of_.clear();
  published_ = {};
  return Status::Ok();
}

}  // namespace rdmak8s::dra
