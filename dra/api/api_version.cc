#include "dra/api/api_version.h"

#include <spdlog/spdlog.h>

#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {
namespace {

// The versions an APIGroup answer lists ($.versions[i].version), through checked reads.
Status ReadVersions(const nlohmann::json& group, bool* v1, bool* v1beta1) {
  using namespace json_reader;
  RDMAK8S_ASSIGN_OR_RETURN(const nlohmann::json* versions, ArrayAt(group, "$", "versions"));
  if (!versions) return Status::Ok();
  for (size_t i = 0; i < versions->size(); ++i) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string name, StringAt((*versions)[i], Index("$.versions", i), "version"));
    *v1 |= name == "v1";
    *v1beta1 |= name == "v1beta1";
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ResourceApiVersion> ApiVersionSource::Get(std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!version_ && discovering_) {
    if (!deadline) {
      discovered_.wait(lock);
    } else if (discovered_.wait_until(lock, *deadline) == std::cv_status::timeout && !version_ && discovering_) {
      return DeadlineExceededError("discover resource.k8s.io versions: another discovery of " + api_->server() +
                                   " is still waiting for its answer past the caller's deadline");
    }
  }
  if (version_) return *version_;
  discovering_ = true;
  lock.unlock();
  StatusOr<ResourceApiVersion> found = Discover(deadline);
  lock.lock();
  discovering_ = false;
  discovered_.notify_all();
  if (!found.ok()) return found;
  version_ = *found;
  if (version_ != last_logged_) {
    SPDLOG_INFO("API server {}: resource.k8s.io/{}", api_->server(), ResourceApiVersionName(*version_));
    last_logged_ = version_;
  }
  return *version_;
}

StatusOr<ResourceApiVersion> ApiVersionSource::Discover(std::optional<std::chrono::steady_clock::time_point> deadline) {
  HttpRequest req{"GET", "/apis/resource.k8s.io", ""};
  req.deadline = deadline;
  StatusOr<HttpResponse> sent = api_->Send(req);
  if (!sent.ok()) return sent.status().Prepend("discover resource.k8s.io versions");
  const HttpResponse& resp = *sent;
  if (resp.status == kHttpNotFound) {
    return UnimplementedError("API server " + api_->server() + " serves no resource.k8s.io (DRA needs Kubernetes 1.32+)");
  }
  if (resp.status != 200) return ApiError(*api_, req, resp).Prepend("discover resource.k8s.io versions");
  bool v1 = false, v1beta1 = false;
  const std::string what = req.method + " " + api_->server() + req.path;
  StatusOr<nlohmann::json> group = json_reader::Parse(resp.body, what);
  if (!group.ok()) return group.status().Prepend("discover resource.k8s.io versions");
  if (Status s = ReadVersions(*group, &v1, &v1beta1); !s.ok()) {
    return s.Prepend("discover resource.k8s.io versions: " + what);
  }
  if (v1) return ResourceApiVersion::kV1;
  if (v1beta1) return ResourceApiVersion::kV1beta1;
  return UnimplementedError("API server " + api_->server() + ": resource.k8s.io serves neither v1 nor v1beta1");
}

bool ApiVersionSource::Forget(ResourceApiVersion seen) {
  std::lock_guard<std::mutex> lock(mu_);
  if (version_ != seen) return false;
  SPDLOG_WARN("API server {}: resource.k8s.io/{} answered 404: asking which versions it serves again",
              api_->server(), ResourceApiVersionName(seen));
  version_.reset();
  return true;
}

}  // namespace rdmak8s::dra

namespace rdmak8s::dra {

bool IsVersionNotFound(const HttpResponse& response, std::string_view name) {
  using namespace json_reader;
  static const KeepOnly kDetails({"kind", "details.name"});
  StatusOr<nlohmann::json> status = Parse(response.body, "404 answer", &kDetails);
  if (!status.ok() || !status->is_object()) return true;
  StatusOr<std::string> kind = StringAt(*status, "$", "kind");
  if (!kind.ok() || *kind != "Status") return true;
  StatusOr<const nlohmann::json*> details = ObjectAt(*status, "$", "details");
  if (!details.ok() || *details == nullptr) return true;
  StatusOr<std::string> named = StringAt(**details, "$.details", "name");
  return !named.ok() || *named != name;
}

}  // namespace rdmak8s::dra
