#include "dra/api/claim_reader.h"

#include <nlohmann/json.hpp>

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

std::string Path(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

// A field of `obj` at path `where`: a string (required or "" when absent).
StatusOr<std::string> StringField(const json& obj, const std::string& where, const char* key,
                                  bool required) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return InvalidArgumentError(Path(where, key) + ": missing");
    return std::string();
  }
  if (!it->is_string()) return InvalidArgumentError(Path(where, key) + ": not a string");
  return it->get<std::string>();
}

// obj[key] as an array ([] when absent or null).
StatusOr<json> ArrayField(const json& obj, const std::string& where, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return json::array();
  if (!it->is_array()) return InvalidArgumentError(Path(where, key) + ": not a list");
  return *it;
}

// obj[key] as an object (null when absent or null).
StatusOr<json> ObjectField(const json& obj, const std::string& where, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return json();
  if (!it->is_object()) return InvalidArgumentError(Path(where, key) + ": not an object");
  return *it;
}

std::string At(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

// Calls `fn(item, path)` for each item of the list parent[key] (none when absent), every item
// required to be an object; the first error ends the walk.
template <typename Fn>
Status EachObject(const json& parent, const std::string& where, const char* key, Fn fn) {
  RDMAK8S_ASSIGN_OR_RETURN(json list, ArrayField(parent, where, key));
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = At(Path(where, key), i);
    if (!list[i].is_object()) return InvalidArgumentError(at + ": not an object");
    RDMAK8S_RETURN_IF_ERROR(fn(list[i], at));
  }
  return Status::Ok();
}

Status ParseResults(const json& devices, ResourceClaim& claim) {
  auto parse = [&](const json& r, const std::string& at) -> Status {
    DeviceResult d;
    RDMAK8S_ASSIGN_OR_RETURN(d.request, StringField(r, at, "request", true));
    RDMAK8S_ASSIGN_OR_RETURN(d.driver, StringField(r, at, "driver", true));
    RDMAK8S_ASSIGN_OR_RETURN(d.pool, StringField(r, at, "pool", true));
    RDMAK8S_ASSIGN_OR_RETURN(d.device, StringField(r, at, "device", true));
    claim.results.push_back(std::move(d));
    return Status::Ok();
  };
  return EachObject(devices, "status.allocation.devices", "results", parse);
}

Status ParseConfig(const json& devices, ResourceClaim& claim) {
  auto parse = [&](const json& c, const std::string& at) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(json opaque, ObjectField(c, at, "opaque"));
    if (opaque.is_null()) return Status::Ok();  // a configuration kind of a newer API: not ours
    OpaqueConfig o;
    RDMAK8S_ASSIGN_OR_RETURN(o.source, StringField(c, at, "source", true));
    RDMAK8S_ASSIGN_OR_RETURN(json requests, ArrayField(c, at, "requests"));
    for (size_t k = 0; k < requests.size(); ++k) {
      if (!requests[k].is_string()) return InvalidArgumentError(At(at + ".requests", k) + ": not a string");
      o.requests.push_back(requests[k].get<std::string>());
    }
    RDMAK8S_ASSIGN_OR_RETURN(o.driver, StringField(opaque, at + ".opaque", "driver", true));
    auto params = opaque.find("parameters");
    o.parameters = (params == opaque.end() || params->is_null()) ? "{}" : params->dump();
    claim.config.push_back(std::move(o));
    return Status::Ok();
  };
  return EachObject(devices, "status.allocation.devices", "config", parse);
}

Status ParseReservedFor(const json& status, ResourceClaim& claim) {
  auto parse = [&](const json& r, const std::string& at) -> Status {
    ConsumerReference c;
    RDMAK8S_ASSIGN_OR_RETURN(c.api_group, StringField(r, at, "apiGroup", false));
    RDMAK8S_ASSIGN_OR_RETURN(c.resource, StringField(r, at, "resource", true));
    RDMAK8S_ASSIGN_OR_RETURN(c.name, StringField(r, at, "name", true));
    RDMAK8S_ASSIGN_OR_RETURN(c.uid, StringField(r, at, "uid", true));
    claim.reserved_for.push_back(std::move(c));
    return Status::Ok();
  };
  return EachObject(status, "status", "reservedFor", parse);
}

StatusOr<ResourceClaim> Decode(const json& obj) {
  if (!obj.is_object()) return InvalidArgumentError("not a JSON object");
  RDMAK8S_ASSIGN_OR_RETURN(std::string kind, StringField(obj, "", "kind", false));
  if (!kind.empty() && kind != "ResourceClaim") return InvalidArgumentError("kind is " + kind);
  RDMAK8S_ASSIGN_OR_RETURN(std::string api_version, StringField(obj, "", "apiVersion", false));
  if (!api_version.empty() && api_version != "resource.k8s.io/v1" &&
      api_version != "resource.k8s.io/v1beta1" && api_version != "resource.k8s.io/v1beta2") {
    return InvalidArgumentError("apiVersion " + api_version + " is not one we read");
  }
  ResourceClaim claim;
  RDMAK8S_ASSIGN_OR_RETURN(json meta, ObjectField(obj, "", "metadata"));
  if (meta.is_null()) return InvalidArgumentError("metadata: missing");
  RDMAK8S_ASSIGN_OR_RETURN(claim.namespace_name, StringField(meta, "metadata", "namespace", false));
  RDMAK8S_ASSIGN_OR_RETURN(claim.name, StringField(meta, "metadata", "name", true));
  RDMAK8S_ASSIGN_OR_RETURN(claim.uid, StringField(meta, "metadata", "uid", true));
  RDMAK8S_ASSIGN_OR_RETURN(json status, ObjectField(obj, "", "status"));
  if (status.is_null()) return claim;
  RDMAK8S_ASSIGN_OR_RETURN(json allocation, ObjectField(status, "status", "allocation"));
  if (!allocation.is_null()) {
    claim.allocated = true;
    RDMAK8S_ASSIGN_OR_RETURN(json devices, ObjectField(allocation, "status.allocation", "devices"));
    if (!devices.is_null()) {
      RDMAK8S_RETURN_IF_ERROR(ParseResults(devices, claim));
      RDMAK8S_RETURN_IF_ERROR(ParseConfig(devices, claim));
    }
  }
  RDMAK8S_RETURN_IF_ERROR(ParseReservedFor(status, claim));
  return claim;
}

}  // namespace

StatusOr<ResourceClaim> ParseResourceClaim(std::string_view json_text) {
  json obj;
  try {
    obj = json::parse(json_text);
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("decode ResourceClaim: not JSON: ") + e.what());
  }
  StatusOr<ResourceClaim> claim = Decode(obj);
  if (!claim.ok()) return claim.status().Prepend("decode ResourceClaim");
  return claim;
}

StatusOr<ResourceClaim> ApiClaimReader::GetClaim(const std::string& ns, const std::string& name,
                                                 ClaimDeadline deadline) {
  // Kubelet's names go into the path: only valid names, and those percent-encoded as well.
  RDMAK8S_RETURN_IF_ERROR_CTX(CheckClaimName(ns, name), "get ResourceClaim");
  const std::string what = "get ResourceClaim " + ns + "/" + name;
  ResourceApiVersion version = version_;
  if (versions_) {
    StatusOr<ResourceApiVersion> v = versions_->Get(deadline);
    if (!v.ok()) return v.status().Prepend(what);
    version = *v;
  }
  HttpRequest req;
  req.path = "/apis/resource.k8s.io/" + std::string(ResourceApiVersionName(version)) +
             "/namespaces/" + PathSegment(ns) + "/resourceclaims/" + PathSegment(name);
  req.deadline = deadline;
  StatusOr<HttpResponse> resp = api_->Send(req);
  // Whatever kept the answer from coming (even a token file read's ENOENT) is not the claim's
  // absence: kubelet retries, and so does the preparer.
  if (!resp.ok()) {
    if (resp.status().code() == StatusCode::kDeadlineExceeded) return resp.status().Prepend(what);
    return UnavailableError(what + ": " + resp.status().message());
  }
  // A 404 is the claim's absence or the version's (the server was upgraded): the next read
  // asks which version is served (one discovery; the same version stays when it is served).
  if (resp->status == kHttpNotFound && versions_) versions_->Forget(version);
  if (resp->status != 200) return ApiError(*api_, req, *resp).Prepend(what);
  StatusOr<ResourceClaim> claim = ParseResourceClaim(resp->body);
  if (!claim.ok()) return claim.status().Prepend(what);
  return claim;
}

}  // namespace rdmak8s::dra
