#include "dra/api/slice_watch.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

// The outcome of one line of a watch.
struct Decoded {
  std::optional<SliceEvent> event;
  Status error;  // an ERROR event (410: FailedPrecondition) or a malformed line
};

Decoded DecodeEvent(std::string_view line, ResourceApiVersion version) {
  using namespace json_reader;
  Decoded out;
  StatusOr<json> parsed = Parse(line, "watch event");
  if (!parsed.ok()) {
    out.error = parsed.status();
    return out;
  }
  auto decode = [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(std::string type, StringAt(*parsed, "$", "type", /*required=*/true));
    RDMAK8S_ASSIGN_OR_RETURN(const json* object, ObjectAt(*parsed, "$", "object"));
    if (!object) return InvalidArgumentError("$.object: missing");
    if (type == "ERROR") {
      RDMAK8S_ASSIGN_OR_RETURN(int64_t code, IntAt(*object, "$.object", "code", 0));
      RDMAK8S_ASSIGN_OR_RETURN(std::string message, StringAt(*object, "$.object", "message"));
      std::string text = "watch ERROR event: code " + std::to_string(code) + (message.empty() ? "" : ": " + message);
      if (code == kHttpGone) return FailedPreconditionError(text);
      return UnavailableError(text);
    }
    SliceEvent ev;
    if (type == "BOOKMARK") {
      ev.type = SliceEvent::Type::kBookmark;
      RDMAK8S_ASSIGN_OR_RETURN(const json* meta, ObjectAt(*object, "$.object", "metadata"));
      if (meta) {
        RDMAK8S_ASSIGN_OR_RETURN(ev.resource_version, StringAt(*meta, "$.object.metadata", "resourceVersion"));
      }
      out.event = std::move(ev);
      return Status::Ok();
    }
    if (type == "ADDED") ev.type = SliceEvent::Type::kAdded;
    else if (type == "MODIFIED") ev.type = SliceEvent::Type::kModified;
    else if (type == "DELETED") ev.type = SliceEvent::Type::kDeleted;
    else return InvalidArgumentError("$.type: \"" + type + "\" is not a watch event type");
    RDMAK8S_ASSIGN_OR_RETURN(ev.slice, DecodeResourceSliceAt(*object, "$.object", version));
    ev.resource_version = ev.slice.resource_version;
    out.event = std::move(ev);
    return Status::Ok();
  };
  out.error = decode();
  return out;
}

}  // namespace

SliceWatch::SliceWatch(KubeApi* api, ApiVersionSource* versions, std::string driver, std::string node_name)
    : api_(api), versions_(versions), driver_(std::move(driver)), node_name_(std::move(node_name)) {}

Status SliceWatch::WatchOnce(std::string* resource_version, int timeout_seconds,
                             const std::function<void(const SliceEvent&)>& on_event,
                             const std::function<bool()>& cancelled, int* events) {
  RDMAK8S_ASSIGN_OR_RETURN(ResourceApiVersion version, versions_->Get());
  HttpRequest req;
  req.path = "/apis/resource.k8s.io/" + std::string(ResourceApiVersionName(version)) +
             "/resourceslices?watch=true&allowWatchBookmarks=true&fieldSelector=" +
             QueryValue(PoolFieldSelector(node_name_, driver_)) +
             "&timeoutSeconds=" + std::to_string(timeout_seconds);
  if (!resource_version->empty()) req.path += "&resourceVersion=" + QueryValue(*resource_version);
  const std::string what = "watch ResourceSlices: " + req.method + " " + api_->server() + req.path;
  Status failed;
  int count = 0;
  auto on_line = [&](std::string_view line) {
    Decoded d = DecodeEvent(line, version);
    if (!d.error.ok()) {
      failed = d.error.code() == StatusCode::kInvalidArgument
                   ? d.error.Prepend("event " + std::to_string(count + 1))
                   : d.error;
      return false;
    }
    if (!d.event->resource_version.empty()) *resource_version = d.event->resource_version;
    ++count;
    if (events) *events = count;
    on_event(*d.event);
    return true;
  };
  RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Stream(req, on_line, cancelled));
  if (resp.status == kHttpNotFound) {
    versions_->Forget(version);
    return ApiError(*api_, req, resp).Prepend("watch ResourceSlices (resource.k8s.io version gone)");
  }
  if (resp.status != 200) return ApiError(*api_, req, resp).Prepend("watch ResourceSlices");
  if (!failed.ok()) return failed.Prepend(what);
  return Status::Ok();
}

}  // namespace rdmak8s::dra
