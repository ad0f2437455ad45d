// Lists and watches every namespace's ResourceClaims, handing on those held at binding on our
// devices (claim_watch.h).
#include "dra/api/claim_watch.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "dra/claim_status.h"
#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;
using namespace json_reader;

// The claim fields read (claim_watch.h), under `prefix` ("items." for a list, "object." for a
// watch event).
#define RDMAK8S_CLAIM_FIELDS(prefix)                                                              \
  prefix "metadata.namespace", prefix "metadata.name", prefix "metadata.uid",                     \
      prefix "metadata.resourceVersion", prefix "status.allocation.devices.results.driver",       \
      prefix "status.allocation.devices.results.pool",                                            \
      prefix "status.allocation.devices.results.device",                                          \
      prefix "status.allocation.devices.results.shareID",                                         \
      prefix "status.allocation.devices.results.request",                                         \
      prefix "status.allocation.devices.results.bindingConditions",                               \
      prefix "status.allocation.devices.results.bindingFailureConditions",                        \
      prefix "status.devices.driver", prefix "status.devices.pool", prefix "status.devices.device", \
      prefix "status.devices.shareID", prefix "status.devices.conditions.type",                   \
      prefix "status.devices.conditions.status"

const KeepOnly& ListFields() {
  static const KeepOnly kKeep({"metadata.resourceVersion", "metadata.continue", RDMAK8S_CLAIM_FIELDS("items.")});
  return kKeep;
}
const KeepOnly& EventFields() {
  static const KeepOnly kKeep({"type", "object.code", "object.message", RDMAK8S_CLAIM_FIELDS("object.")});
  return kKeep;
}

// Our entry's condition statuses for (pool, device, shareID) in status.devices. Every entry's key
// is read strictly; ours are split off by driver, as the status writer splits them
// (claim_status_writer.cc), and the device's is found by the one match rule (claim_status.h's
// EntryIndexOf).
StatusOr<std::map<std::string, std::string>> EntryConditions(const json* entries, const std::string& path,
                                                             std::string_view driver, const AllocatedDevice& a) {
  std::map<std::string, std::string> out;
  if (!entries) return out;
  json ours = json::array();
  std::vector<std::string> paths;
  for (size_t i = 0; i < entries->size(); ++i) {
    const json& e = (*entries)[i];
    const std::string at = Index(path, i);
    RDMAK8S_RETURN_IF_ERROR(RequireObject(e, at));
    RDMAK8S_ASSIGN_OR_RETURN(std::string d, StringAt(e, at, "driver"));
    for (const char* key : {"pool", "device", "shareID"}) RDMAK8S_RETURN_IF_ERROR(StringAt(e, at, key).status());
    if (d != driver) continue;
    ours.push_back(e);
    paths.push_back(at);
  }
  const std::optional<size_t> mine = EntryIndexOf(ours, a);
  if (!mine) return out;
  const json& e = ours[*mine];
  const std::string& at = paths[*mine];
  RDMAK8S_ASSIGN_OR_RETURN(const json* conditions, ArrayAt(e, at, "conditions"));
  if (!conditions) return out;
  for (size_t c = 0; c < conditions->size(); ++c) {
    const std::string cat = Index(Field(at, "conditions"), c);
    RDMAK8S_RETURN_IF_ERROR(RequireObject((*conditions)[c], cat));
    RDMAK8S_ASSIGN_OR_RETURN(std::string type, StringAt((*conditions)[c], cat, "type"));
    RDMAK8S_ASSIGN_OR_RETURN(out[type], StringAt((*conditions)[c], cat, "status"));
  }
  return out;
}

}  // namespace

StatusOr<HeldClaim> DecodeHeldClaim(const json& claim, const std::string& path, std::string_view driver,
                                    std::string_view pool) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(claim, path));
  HeldClaim out;
  RDMAK8S_ASSIGN_OR_RETURN(const json* meta, ObjectAt(claim, path, "metadata"));
  if (!meta) return Missing(Field(path, "metadata"));
  const std::string meta_path = Field(path, "metadata");
  RDMAK8S_ASSIGN_OR_RETURN(out.namespace_name, StringAt(*meta, meta_path, "namespace"));
  RDMAK8S_ASSIGN_OR_RETURN(out.name, StringAt(*meta, meta_path, "name", /*required=*/true));
  RDMAK8S_ASSIGN_OR_RETURN(out.uid, StringAt(*meta, meta_path, "uid", /*required=*/true));
  RDMAK8S_ASSIGN_OR_RETURN(const json* status, ObjectAt(claim, path, "status"));
  if (!status) return out;
  const std::string status_path = Field(path, "status");
  RDMAK8S_ASSIGN_OR_RETURN(const json* allocation, ObjectAt(*status, status_path, "allocation"));
  if (!allocation) return out;
  RDMAK8S_ASSIGN_OR_RETURN(const json* devices, ObjectAt(*allocation, Field(status_path, "allocation"), "devices"));
  if (!devices) return out;
  const std::string results_path = Field(Field(Field(status_path, "allocation"), "devices"), "results");
  RDMAK8S_ASSIGN_OR_RETURN(const json* results, ArrayAt(*devices, Field(Field(status_path, "allocation"), "devices"), "results"));
  if (!results) return out;
  RDMAK8S_ASSIGN_OR_RETURN(const json* entries, ArrayAt(*status, status_path, "devices"));
  for (size_t i = 0; i < results->size(); ++i) {
    const json& r = (*results)[i];
    const std::string at = Index(results_path, i);
    RDMAK8S_RETURN_IF_ERROR(RequireObject(r, at));
    RDMAK8S_ASSIGN_OR_RETURN(std::string d, StringAt(r, at, "driver"));
    RDMAK8S_ASSIGN_OR_RETURN(std::string p, StringAt(r, at, "pool"));
    if (d != driver || p != pool) continue;
    std::vector<std::string> conditions, failures;
    RDMAK8S_ASSIGN_OR_RETURN(const json* c, ArrayAt(r, at, "bindingConditions"));
    if (c) {
      RDMAK8S_ASSIGN_OR_RETURN(conditions, StringList(*c, Field(at, "bindingConditions")));
    }
    if (conditions.empty()) continue;  // nothing holds this device at binding
    RDMAK8S_ASSIGN_OR_RETURN(const json* f, ArrayAt(r, at, "bindingFailureConditions"));
    if (f) {
      RDMAK8S_ASSIGN_OR_RETURN(failures, StringList(*f, Field(at, "bindingFailureConditions")));
    }
    AllocatedDevice a;
    RDMAK8S_ASSIGN_OR_RETURN(a.request, StringAt(r, at, "request"));
    a.pool = p;
    RDMAK8S_ASSIGN_OR_RETURN(a.device, StringAt(r, at, "device", /*required=*/true));
    RDMAK8S_ASSIGN_OR_RETURN(a.share_id, StringAt(r, at, "shareID"));
    RDMAK8S_ASSIGN_OR_RETURN(auto said, EntryConditions(entries, Field(status_path, "devices"), driver, a));
    const bool all_true = std::all_of(conditions.begin(), conditions.end(),
                                      [&](const std::string& t) { return said[t] == "True"; });
    const bool failed = std::any_of(failures.begin(), failures.end(),
                                    [&](const std::string& t) { return said[t] == "True"; });
    if (!all_true && !failed) out.waiting.push_back(std::move(a));
  }
  return out;
}

ClaimWatch::ClaimWatch(KubeApi* api, ApiVersionSource* versions, std::string driver, std::string pool)
    : api_(api), versions_(versions), driver_(std::move(driver)), pool_(std::move(pool)) {}

std::string ClaimWatch::CollectionPath(ResourceApiVersion version) const {
  return "/apis/resource.k8s.io/" + std::string(ResourceApiVersionName(version)) + "/resourceclaims";
}

Status ClaimWatch::List(std::string* resource_version, const std::function<void(const HeldClaim&)>& on_claim) {
  RDMAK8S_ASSIGN_OR_RETURN(ResourceApiVersion version, versions_->Get());
  std::string cont;
  do {
    HttpRequest req;
    req.path = CollectionPath(version) + "?limit=" + std::to_string(kListPageSize);
    if (!cont.empty()) req.path += "&continue=" + QueryValue(cont);
    // Bounded, so that a hung server cannot hold the driver's exit (it joins this thread).
    req.deadline = std::chrono::steady_clock::now() + kListPageTimeout;
    RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Send(req));
    if (resp.status != 200) return ApiError(*api_, req, resp).Prepend("list ResourceClaims");
    const std::string what = "list ResourceClaims: " + api_->server() + req.path;
    auto page = [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(json list, Parse(resp.body, "$", &ListFields()));
      cont.clear();
      RDMAK8S_ASSIGN_OR_RETURN(const json* meta, ObjectAt(list, "$", "metadata"));
      if (meta) {
        RDMAK8S_ASSIGN_OR_RETURN(*resource_version, StringAt(*meta, "$.metadata", "resourceVersion"));
        RDMAK8S_ASSIGN_OR_RETURN(cont, StringAt(*meta, "$.metadata", "continue"));
      }
      RDMAK8S_ASSIGN_OR_RETURN(const json* items, ArrayAt(list, "$", "items"));
      if (!items) return Status::Ok();
      for (size_t i = 0; i < items->size(); ++i) {
        RDMAK8S_ASSIGN_OR_RETURN(HeldClaim c, DecodeHeldClaim((*items)[i], Index("$.items", i), driver_, pool_));
        on_claim(c);
      }
      return Status::Ok();
    };
    if (Status s = page(); !s.ok()) return s.Prepend(what);
  } while (!cont.empty());
  return Status::Ok();
}

Status ClaimWatch::WatchOnce(std::string* resource_version, int timeout_seconds,
                             const std::function<void(bool deleted, const HeldClaim&)>& on_event,
                             const std::function<bool()>& cancelled) {
  RDMAK8S_ASSIGN_OR_RETURN(ResourceApiVersion version, versions_->Get());
  HttpRequest req;
  req.path = CollectionPath(version) + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=" +
             std::to_string(timeout_seconds);
  if (!resource_version->empty()) req.path += "&resourceVersion=" + QueryValue(*resource_version);
  const std::string what = "watch ResourceClaims: " + api_->server() + req.path;
  Status failed;
  int count = 0;
  auto on_line = [&](std::string_view line) {
    ++count;
    auto handle = [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(json ev, Parse(line, "event " + std::to_string(count), &EventFields()));
      RDMAK8S_ASSIGN_OR_RETURN(std::string type, StringAt(ev, "$", "type", /*required=*/true));
      RDMAK8S_ASSIGN_OR_RETURN(const json* object, ObjectAt(ev, "$", "object"));
      if (!object) return Missing("$.object");
      if (type == "ERROR") {
        RDMAK8S_ASSIGN_OR_RETURN(int64_t code, IntAt(*object, "$.object", "code", 0));
        RDMAK8S_ASSIGN_OR_RETURN(std::string message, StringAt(*object, "$.object", "message"));
        const std::string text = "watch ERROR event: code " + std::to_string(code) + ": " + message;
        return code == kHttpGone ? FailedPreconditionError(text) : UnavailableError(text);
      }
      RDMAK8S_ASSIGN_OR_RETURN(const json* meta, ObjectAt(*object, "$.object", "metadata"));
      if (meta) {
        RDMAK8S_ASSIGN_OR_RETURN(std::string rv, StringAt(*meta, "$.object.metadata", "resourceVersion"));
        if (!rv.empty()) *resource_version = rv;
      }
      if (type == "BOOKMARK") return Status::Ok();
      if (type != "ADDED" && type != "MODIFIED" && type != "DELETED") {
        return InvalidArgumentError("$.type: \"" + type + "\" is not a watch event type");
      }
      RDMAK8S_ASSIGN_OR_RETURN(HeldClaim c, DecodeHeldClaim(*object, "$.object", driver_, pool_));
      on_event(type == "DELETED", c);
      return Status::Ok();
    };
    failed = handle();
    return failed.ok();
  };
  RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Stream(req, on_line, cancelled));
  if (resp.status == kHttpGone) return FailedPreconditionError(what + ": 410 Gone");
  if (resp.status != 200) return ApiError(*api_, req, resp).Prepend("watch ResourceClaims");
  if (!failed.ok()) return failed.Prepend(what);
  return Status::Ok();
}

void ClaimWatch::Run(BindingConditionSetter* setter, const std::function<bool()>& cancelled,
                     const std::function<bool(std::chrono::milliseconds)>& sleep) {
  constexpr std::chrono::milliseconds kInitialBackoff{1000}, kMaxBackoff{30000};
  std::chrono::milliseconds backoff = kInitialBackoff;
  std::string rv;
  while (!cancelled()) {
    Status s;
    try {
      if (rv.empty()) s = List(&rv, [&](const HeldClaim& c) { setter->Seen(c); });
      if (s.ok()) {
        s = WatchOnce(&rv, 300, [&](bool deleted, const HeldClaim& c) {
          if (deleted) setter->Gone(c.uid); else setter->Seen(c);
        }, cancelled);
      }
    } catch (const std::exception& e) {  // the edge of this thread
      s = InternalError(std::string("claim watch: ") + e.what());
    }
    if (s.ok()) {
      backoff = kInitialBackoff;
      continue;  // the server ended the watch: go on from rv
    }
    rv.clear();  // list again: from scratch after 410 and after any other error
    if (s.code() == StatusCode::kFailedPrecondition) continue;
    SPDLOG_WARN("binding conditions: {} (again in {} ms)", s.ToString(), backoff.count());
    if (!sleep(backoff)) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace rdmak8s::dra
