// Swell: a ResourceClaim made as large as a tenant can make one (issue 32 item 3): `labels`
// labels and the managedFields entry the API server adds naming each (45,000 of them make a
// claim of about 1.4 MB, as in the issue, near etcd's 1.5 MiB object limit). For the claim reader's tests and
// the memory bench.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace rdmak8s::testing {

inline void Swell(nlohmann::json& claim, int labels) {
  nlohmann::json fields = nlohmann::json::object();
  for (int i = 0; i < labels; ++i) {
    claim["metadata"]["labels"]["l" + std::to_string(i)] = "value";
    fields["f:l" + std::to_string(i)] = nlohmann::json::object();
  }
  claim["metadata"]["managedFields"] = nlohmann::json::array(
      {{{"manager", "kubectl"}, {"operation", "Apply"}, {"fieldsV1", {{"f:metadata", {{"f:labels", fields}}}}}}});
}

}  // namespace rdmak8s::testing
