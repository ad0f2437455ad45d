#include "dra/api/claim_reader.h"

#include <nlohmann/json.hpp>

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

bool ConfigApplies(const json& requests, const std::string& request) {
  if (!requests.is_array() || requests.empty()) return true;
  std::string parent = request.substr(0, request.find('/'));
  for (const auto& r : requests) {
    if (!r.is_string()) continue;
    const std::string name = r.get<std::string>();
    if (name == request || name == parent) return true;
  }
  return false;
}

}  // namespace

StatusOr<ResourceClaimView> ParseResourceClaim(std::string_view json_text, const std::string& driver,
                                               std::string_view expected_uid) {
  try {
    json claim = json::parse(json_text);
    ResourceClaimView v;
    const json& meta = claim.at("metadata");
    v.namespace_ = meta.value("namespace", std::string());
    v.name = meta.at("name").get<std::string>();
    v.uid = meta.value("uid", std::string());
    if (!expected_uid.empty() && v.uid != expected_uid) {
      return FailedPreconditionError("claim " + v.namespace_ + "/" + v.name + ": UID is " + v.uid +
                                     ", kubelet asked for " + std::string(expected_uid));
    }
    const json status = claim.value("status", json::object());
    const json allocation = status.value("allocation", json());
    if (!allocation.is_object()) {
      return FailedPreconditionError("claim " + v.namespace_ + "/" + v.name + " is not allocated");
    }
    const json devices = allocation.value("devices", json::object());
    for (const auto& r : devices.value("results", json::array())) {
      AllocatedDevice d{r.at("request").get<std::string>(), r.at("driver").get<std::string>(),
                        r.at("pool").get<std::string>(), r.at("device").get<std::string>()};
      if (d.driver == driver) v.results.push_back(std::move(d));
    }
    for (const auto& c : devices.value("config", json::array())) {
      const json opaque = c.value("opaque", json());
      if (!opaque.is_object() || opaque.value("driver", std::string()) != driver) continue;
      for (const auto& d : v.results) {
        if (!ConfigApplies(c.value("requests", json()), d.request)) continue;
        std::string& slot = v.opaque_config[d.request];
        json arr = slot.empty() ? json::array() : json::parse(slot);
        arr.push_back(opaque.value("parameters", json::object()));
        slot = arr.dump();
      }
    }
    for (const auto& ref : status.value("reservedFor", json::array())) {
      if (ref.value("resource", std::string()) == "pods" && ref.value("apiGroup", std::string()).empty()) {
        v.reserved_for_pod_uids.push_back(ref.at("uid").get<std::string>());
      }
    }
    return v;
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("decode ResourceClaim: ") + e.what());
  }
}

StatusOr<ResourceClaimView> ApiClaimReader::Read(std::string_view ns, std::string_view name, std::string_view uid) {
  HttpRequest req;
  req.path = "/apis/resource.k8s.io/" + std::string(ResourceApiVersionName(version_)) + "/namespaces/" +
             std::string(ns) + "/resourceclaims/" + std::string(name);
  RDMAK8S_ASSIGN_OR_RETURN(HttpResponse resp, api_->Send(req));
  if (resp.status != 200) return ApiError(*api_, req, resp);
  return ParseResourceClaim(resp.body, driver_, uid);
}

}  // namespace rdmak8s::dra
