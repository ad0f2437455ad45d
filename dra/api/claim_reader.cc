#include "dra/api/claim_reader.h"

#include <nlohmann/json.hpp>

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

// The members of a ResourceClaim answer the driver reads (claim_reader.h); the rest (spec,
// labels, annotations, managedFields, nodeSelector, ...) is skipped while parsing, never built.
const json_reader::KeepOnly& ClaimFields() {
  static const json_reader::KeepOnly kKeep({
      "kind", "apiVersion", "metadata.namespace", "metadata.name", "metadata.uid",
      "status.allocation.devices.results.request", "status.allocation.devices.results.driver",
      "status.allocation.devices.results.pool", "status.allocation.devices.results.device",
      "status.allocation.devices.config.source", "status.allocation.devices.config.requests",
      "status.allocation.devices.config.opaque.driver", "status.allocation.devices.config.opaque.parameters",
      "status.reservedFor.apiGroup", "status.reservedFor.resource", "status.reservedFor.name",
      "status.reservedFor.uid"});
  return kKeep;
}

std::string Path(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

// obj[key], nullptr when absent or null.
const json* Member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// A field of `obj` at path `where`: a string (required or "" when absent).
StatusOr<std::string> StringField(const json& obj, const std::string& where, const char* key,
                                  bool required) {
  const json* v = Member(obj, key);
  if (v == nullptr) {
    if (required) return InvalidArgumentError(Path(where, key) + ": missing");
    return std::string();
  }
  if (!v->is_string()) return InvalidArgumentError(Path(where, key) + ": not a string");
  return v->get<std::string>();
}

// obj[key] as a list (nullptr when absent or null): the claim's own, never a copy.
StatusOr<const json*> ArrayField(const json& obj, const std::string& where, const char* key) {
  const json* v = Member(obj, key);
  if (v != nullptr && !v->is_array()) return InvalidArgumentError(Path(where, key) + ": not a list");
  return v;
}

// obj[key] as an object (nullptr when absent or null).
StatusOr<const json*> ObjectField(const json& obj, const std::string& where, const char* key) {
  const json* v = Member(obj, key);
  if (v != nullptr && !v->is_object()) return InvalidArgumentError(Path(where, key) + ": not an object");
  return v;
}

std::string At(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

// Calls `fn(item, path)` for each item of the list parent[key] (none when absent), every item
// required to be an object; the first error ends the walk.
template <typename Fn>
Status EachObject(const json& parent, const std::string& where, const char* key, Fn fn) {
  RDMAK8S_ASSIGN_OR_RETURN(const json* list, ArrayField(parent, where, key));
  if (list == nullptr) return Status::Ok();
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string at = At(Path(where, key), i);
    if (!(*list)[i].is_object()) return InvalidArgumentError(at + ": not an object");
    RDMAK8S_RETURN_IF_ERROR(fn((*list)[i], at));
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
    RDMAK8S_ASSIGN_OR_RETURN(const json* opaque, ObjectField(c, at, "opaque"));
    if (opaque == nullptr) return Status::Ok();  // a configuration kind of a newer API: not ours
    OpaqueConfig o;
    RDMAK8S_ASSIGN_OR_RETURN(o.source, StringField(c, at, "source", true));
    RDMAK8S_ASSIGN_OR_RETURN(const json* requests, ArrayField(c, at, "requests"));
    for (size_t k = 0; requests != nullptr && k < requests->size(); ++k) {
      if (!(*requests)[k].is_string()) return InvalidArgumentError(At(at + ".requests", k) + ": not a string");
      o.requests.push_back((*requests)[k].get<std::string>());
    }
    RDMAK8S_ASSIGN_OR_RETURN(o.driver, StringField(*opaque, at + ".opaque", "driver", true));
    // The parameters' nesting is bounded by the parse (json_reader::kMaxDepth): dump recurses.
    const json* params = Member(*opaque, "parameters");
    o.parameters = params == nullptr ? "{}" : params->dump();
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
  RDMAK8S_ASSIGN_OR_RETURN(const json* meta, ObjectField(obj, "", "metadata"));
  if (meta == nullptr) return InvalidArgumentError("metadata: missing");
  RDMAK8S_ASSIGN_OR_RETURN(claim.namespace_name, StringField(*meta, "metadata", "namespace", false));
  RDMAK8S_ASSIGN_OR_RETURN(claim.name, StringField(*meta, "metadata", "name", true));
  RDMAK8S_ASSIGN_OR_RETURN(claim.uid, StringField(*meta, "metadata", "uid", true));
  RDMAK8S_ASSIGN_OR_RETURN(const json* status, ObjectField(obj, "", "status"));
  if (status == nullptr) return claim;
  RDMAK8S_ASSIGN_OR_RETURN(const json* allocation, ObjectField(*status, "status", "allocation"));
  if (allocation != nullptr) {
    claim.allocated = true;
    RDMAK8S_ASSIGN_OR_RETURN(const json* devices, ObjectField(*allocation, "status.allocation", "devices"));
    if (devices != nullptr) {
      RDMAK8S_RETURN_IF_ERROR(ParseResults(*devices, claim));
      RDMAK8S_RETURN_IF_ERROR(ParseConfig(*devices, claim));
    }
  }
  RDMAK8S_RETURN_IF_ERROR(ParseReservedFor(*status, claim));
  return claim;
}

}  // namespace

StatusOr<ResourceClaim> ParseResourceClaim(std::string_view json_text) {
  RDMAK8S_ASSIGN_OR_RETURN(const json obj, json_reader::Parse(json_text, "decode ResourceClaim", &ClaimFields()));
  StatusOr<ResourceClaim> claim = Decode(obj);
  if (!claim.ok()) return claim.status().Prepend("decode ResourceClaim");
  return claim;
}

StatusOr<ResourceClaim> ApiClaimReader::GetClaim(const std::string& ns, const std::string& name,
                                                 ClaimDeadline deadline) {
  // Kubelet's names go into the path: only valid names, and those percent-encoded as well.
  RDMAK8S_RETURN_IF_ERROR_CTX(CheckClaimName(ns, name), "get ResourceClaim");
  const std::string what = "get ResourceClaim " + ns + "/" + name;
  // At most kMaxConcurrentReads answers in memory at once (each up to kMaxObjectBytes).
  if (!slots_.try_acquire_until(deadline)) {
    return DeadlineExceededError(what + ": " + std::to_string(kMaxConcurrentReads) +
                                 " other claim reads still had no answer by the caller's deadline");
  }
  struct Release {
    std::counting_semaphore<kMaxConcurrentReads>* slots;
    ~Release() { slots->release(); }
  } release{&slots_};
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
  req.max_response_bytes = kMaxObjectBytes;
  StatusOr<HttpResponse> resp = api_->Send(req);
  // Whatever kept the answer from coming (even a token file read's ENOENT) is not the claim's
  // absence: kubelet retries, and so does the preparer.
  if (!resp.ok()) {
    if (resp.status().code() == StatusCode::kDeadlineExceeded) return resp.status().Prepend(what);
    return UnavailableError(what + ": " + resp.status().message());
  }
  // A 404 is the claim's absence or the version's (the server was upgraded): only the
  // version's makes the next read ask which version is served. A missing claim keeps it.
  if (resp->status == kHttpNotFound && versions_ && IsVersionNotFound(*resp, name)) versions_->Forget(version);
  if (resp->status != 200) return ApiError(*api_, req, *resp).Prepend(what);
  StatusOr<ResourceClaim> claim = ParseResourceClaim(resp->body);
  if (!claim.ok()) return claim.status().Prepend(what);
  return claim;
}

}  // namespace rdmak8s::dra
