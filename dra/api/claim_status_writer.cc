// Writes this driver's status.devices entries of a ResourceClaim (dra/api/claim_status_writer.h).
#include "dra/api/claim_status_writer.h"

#include <nlohmann/json.hpp>

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {

namespace {

using nlohmann::json;

// status.allocation.devices.results[] of `driver`: what our entries may name.
StatusOr<std::vector<AllocatedDevice>> OurResults(const json& allocation, const std::string& driver) {
  std::vector<AllocatedDevice> out;
  const json* devices = allocation.is_object() && allocation.contains("devices") ? &allocation["devices"] : nullptr;
  if (devices == nullptr || !devices->is_object() || !devices->contains("results")) return out;
  const json& results = (*devices)["results"];
  if (!results.is_array()) return InvalidArgumentError("status.allocation.devices.results: not a list");
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string at = json_reader::Index("status.allocation.devices.results", i);
    RDMAK8S_RETURN_IF_ERROR(json_reader::RequireObject(results[i], at));
    RDMAK8S_ASSIGN_OR_RETURN(std::string d, json_reader::StringAt(results[i], at, "driver", true));
    if (d != driver) continue;
    AllocatedDevice a;
    RDMAK8S_ASSIGN_OR_RETURN(a.request, json_reader::StringAt(results[i], at, "request", true));
    RDMAK8S_ASSIGN_OR_RETURN(a.pool, json_reader::StringAt(results[i], at, "pool", true));
    RDMAK8S_ASSIGN_OR_RETURN(a.device, json_reader::StringAt(results[i], at, "device", true));
    RDMAK8S_ASSIGN_OR_RETURN(a.share_id, json_reader::StringAt(results[i], at, "shareID", false));
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

std::string MissingStatusRbac(const std::string& driver) {
  return "the driver's service account needs resourceclaims/status (update) and resourceclaims/driver "
         "(verb associated-node:update, resourceName " + driver +
         ") in resource.k8s.io: manifests/components/dra-driver/rbac.yaml";
}

Status ApiClaimStatusWriter::Update(const std::string& ns, const std::string& name, const std::string& uid,
                                    const StatusEntriesFn& build, ClaimDeadline deadline) {
  RDMAK8S_RETURN_IF_ERROR_CTX(CheckClaimName(ns, name), "update ResourceClaim status");
  const std::string what = "update status of ResourceClaim " + ns + "/" + name;
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    StatusOr<ResourceApiVersion> version = versions_->Get(deadline);
    if (!version.ok()) return version.status().Prepend(what);
    const std::string path = "/apis/resource.k8s.io/" + std::string(ResourceApiVersionName(*version)) +
                             "/namespaces/" + PathSegment(ns) + "/resourceclaims/" + PathSegment(name);
    HttpRequest get;
    get.path = path;
    get.deadline = deadline;
    get.max_response_bytes = kMaxObjectBytes;
    StatusOr<HttpResponse> read = api_->Send(get);
    if (!read.ok()) return read.status().Prepend(what);
    if (read->status == kHttpNotFound && IsVersionNotFound(*read, name)) {
      versions_->Forget(*version);
      continue;
    }
    if (read->status != 200) return ApiError(*api_, get, *read).Prepend(what);
    RDMAK8S_ASSIGN_OR_RETURN(json claim, json_reader::Parse(read->body, what));
    RDMAK8S_RETURN_IF_ERROR_CTX(json_reader::RequireObject(claim, "$"), what);
    const json meta = claim.value("metadata", json::object());
    if (!meta.is_object() || meta.value("uid", "") != uid) {
      return FailedPreconditionError(what + ": the server's claim of that name has another UID");
    }
    json& status = claim["status"];
    if (!status.is_object()) status = json::object();
    if (!status.contains("allocation") || status["allocation"].is_null()) {
      return Status::Ok();  // deallocated: the server dropped every driver's entries
    }
    StatusOr<std::vector<AllocatedDevice>> ours = OurResults(status["allocation"], driver_);
    if (!ours.ok()) return ours.status().Prepend(what);
    json current = json::array(), others = json::array();
    if (status.contains("devices") && status["devices"].is_array()) {
      for (const auto& e : status["devices"]) {
        (e.is_object() && e.value("driver", "") == driver_ ? current : others).push_back(e);
      }
    }
    const json desired = build(*ours, current);
    if (desired == current) return Status::Ok();
    json devices = others;
    for (const auto& e : desired) devices.push_back(e);
    if (devices.empty()) {
      status.erase("devices");
    } else {
      status["devices"] = devices;
    }
    HttpRequest put;
    put.method = "PUT";
    put.path = path + "/status";
    put.body = claim.dump();
    put.deadline = deadline;
    put.max_response_bytes = kMaxObjectBytes;
    StatusOr<HttpResponse> wrote = api_->Send(put);
    if (!wrote.ok()) return wrote.status().Prepend(what);
    if (wrote->status == 200 || wrote->status == 201) return Status::Ok();
    if (wrote->status == kHttpConflict) continue;  // another writer: start again from its result
    Status err = ApiError(*api_, put, *wrote).Prepend(what);
    if (wrote->status == 403) return PermissionDeniedError(err.message() + " (" + MissingStatusRbac(driver_) + ")");
    if (wrote->status == kHttpNotFound) return NotFoundError(err.message());
    return err;
  }
  return UnavailableError(what + ": still conflicting after " + std::to_string(kMaxAttempts) + " attempts");
}

}  // namespace rdmak8s::dra
