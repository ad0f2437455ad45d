#include "dra/api/api_version.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace rdmak8s::dra {

StatusOr<ResourceApiVersion> ApiVersionSource::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (version_) return *version_;
  HttpRequest req{"GET", "/apis/resource.k8s.io", ""};
  StatusOr<HttpResponse> sent = api_->Send(req);
  if (!sent.ok()) return sent.status().Prepend("discover resource.k8s.io versions");
  const HttpResponse& resp = *sent;
  if (resp.status == kHttpNotFound) {
    return UnimplementedError("API server " + api_->server() + " serves no resource.k8s.io (DRA needs Kubernetes 1.32+)");
  }
  if (resp.status != 200) return ApiError(*api_, req, resp).Prepend("discover resource.k8s.io versions");
  bool v1 = false, v1beta1 = false;
  try {
    auto group = nlohmann::json::parse(resp.body);
    for (const auto& v : group.value("versions", nlohmann::json::array())) {
      std::string name = v.value("version", std::string());
      v1 |= name == "v1";
      v1beta1 |= name == "v1beta1";
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(req.method + " " + api_->server() + req.path + ": answer is not JSON: " + e.what());
  }
  if (v1) version_ = ResourceApiVersion::kV1;
  else if (v1beta1) version_ = ResourceApiVersion::kV1beta1;
  else return UnimplementedError("API server " + api_->server() + ": resource.k8s.io serves neither v1 nor v1beta1");
  SPDLOG_INFO("API server {}: resource.k8s.io/{}", api_->server(), ResourceApiVersionName(*version_));
  return *version_;
}

}  // namespace rdmak8s::dra
