#include "cni/dra_device.h"

#include <algorithm>

#include "rdmak8s/base/strings.h"

namespace rdmak8s::cni {

namespace {

// "a/b" -> "a"; "a" -> "a".
std::string_view Parent(std::string_view request) { return request.substr(0, request.find('/')); }

bool Matches(const PodClaimRecord& r, const PodClaimDevice& d, const std::string& q) {
  const std::string_view parent = Parent(d.request);
  return d.request == q || parent == q || r.claim_name + "/" + d.request == q ||
         r.claim_name + "/" + std::string(parent) == q;
}

std::string Describe(const DraChoice& c) { return c.claim + "/" + c.request + " (" + c.rdma_dev + ")"; }

std::string List(const std::vector<DraChoice>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(Describe(c));
  return Join(out);
}

// One entry per RDMA device: the first claim that holds it speaks for it.
void AddOnce(std::vector<DraChoice>* out, DraChoice c) {
  if (std::none_of(out->begin(), out->end(), [&](const DraChoice& o) { return o.rdma_dev == c.rdma_dev; })) {
    out->push_back(std::move(c));
  }
}

// Kubernetes lets a pod use only claims of its own namespace.
Status CheckNamespaces(const std::vector<PodClaimRecord>& records, const std::string& pod_uid,
                       const std::string& pod_namespace) {
  if (!records.empty() && pod_namespace.empty()) {
    return InvalidArgumentError("pod " + pod_uid + " has DRA claim records, but CNI_ARGS has no " +
                                "K8S_POD_NAMESPACE to check their namespace against");
  }
  for (const auto& r : records) {
    if (r.claim_namespace != pod_namespace) {
      return PermissionDeniedError("DRA claim " + Quoted(r.claim_namespace + "/" + r.claim_name) +
                                   " in the records of pod " + pod_uid + " is of namespace " +
                                   Quoted(r.claim_namespace) + ", not the pod's namespace " +
                                   Quoted(pod_namespace) + " (K8S_POD_NAMESPACE): a pod may use only " +
                                   "claims of its own namespace");
    }
  }
  return Status::Ok();
}

}  // namespace

bool ValidDraRequest(std::string_view s) {
  if (s.size() > 253 || std::count(s.begin(), s.end(), '/') > 2) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  while (true) {
    const size_t slash = s.find('/');
    std::string_view part = s.substr(0, slash);
    // A DNS label or subdomain starts and ends with an alphanumeric: never "", "." or "..".
    if (part.empty() || !alnum(part.front()) || !alnum(part.back())) return false;
    if (!std::all_of(part.begin(), part.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; })) {
      return false;
    }
    if (slash == std::string_view::npos) return true;
    s.remove_prefix(slash + 1);
  }
}

StatusOr<DraChoice> PickDraDevice(const std::vector<PodClaimRecord>& records,
                                  const std::string& pod_uid, const std::string& pod_namespace,
                                  const std::string& request) {
  RDMAK8S_RETURN_IF_ERROR(CheckNamespaces(records, pod_uid, pod_namespace));
  std::vector<DraChoice> all, matched;
  for (const auto& r : records) {
    for (const auto& d : r.devices) {
      if (d.rdma_dev.empty()) continue;
      DraChoice c{d.rdma_dev, d.bus_id, r.claim_namespace + "/" + r.claim_name, d.request};
      if (!request.empty() && Matches(r, d, request)) AddOnce(&matched, c);
      AddOnce(&all, std::move(c));
    }
  }
  const std::string pod = "pod " + pod_uid;
  if (request.empty()) {
    if (all.empty()) return NotFoundError("no DRA claim of " + pod + " holds a prepared RDMA device");
    if (all.size() > 1) {
      return InvalidArgumentError("DRA claims of " + pod + " hold " + std::to_string(all.size()) +
                                  " RDMA devices: " + List(all) +
                                  "; the netconf must name one with \"draRequest\"");
    }
    return all.front();
  }
  if (matched.empty()) {
    return NotFoundError("draRequest \"" + request + "\" names no RDMA device of the DRA claims of " +
                         pod + " (they hold: " + (all.empty() ? std::string("none") : List(all)) + ")");
  }
  if (matched.size() > 1) {
    return InvalidArgumentError("draRequest \"" + request + "\" names " + std::to_string(matched.size()) +
                                " RDMA devices of " + pod + ": " + List(matched) +
                                "; name one as \"<claim>/<request>\"");
  }
  return matched.front();
}

StatusOr<std::optional<DraChoice>> DraClaimHolding(const std::vector<PodClaimRecord>& records,
                                                   const std::string& pod_uid,
                                                   const std::string& pod_namespace,
                                                   const std::string& rdma_dev) {
  RDMAK8S_RETURN_IF_ERROR(CheckNamespaces(records, pod_uid, pod_namespace));
  for (const auto& r : records) {
    for (const auto& d : r.devices) {
      if (!d.rdma_dev.empty() && d.rdma_dev == rdma_dev) {
        return std::optional<DraChoice>(DraChoice{d.rdma_dev, d.bus_id, r.claim_namespace + "/" + r.claim_name, d.request});
      }
    }
  }
  return std::optional<DraChoice>();
}

}  // namespace rdmak8s::cni
