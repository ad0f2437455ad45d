#include "dra/device_filter.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "node/selectors.h"
#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {

StatusOr<DeviceFilter> DeviceFilter::Parse(std::string_view json_text) {
  RDMAK8S_ASSIGN_OR_RETURN(nlohmann::json j, json_reader::Parse(json_text, "$"));
  RDMAK8S_RETURN_IF_ERROR(json_reader::CheckKeys(j, "$", {"selectors"}));
  if (!j.contains("selectors") || j["selectors"].is_null()) {
    return json_reader::Invalid("$.selectors",
                                "missing (leave --devices out to take every device)");
  }
  RDMAK8S_ASSIGN_OR_RETURN(node::Selectors s, node::ParseSelectors(j["selectors"], "$.selectors"));
  return DeviceFilter(std::move(s));
}

StatusOr<DeviceFilter> DeviceFilter::Load(const std::string& path) {
  StatusOr<std::string> text = ReadConfigFile(path);
  if (!text.ok()) return text.status().Prepend("--devices " + path);
  StatusOr<DeviceFilter> f = Parse(*text);
  if (!f.ok()) return f.status().Prepend("--devices " + path);
  return f;
}

std::map<std::string, node::TrackedDevice> DeviceFilter::Apply(
    const std::map<std::string, node::TrackedDevice>& tracked) const {
  if (!selectors_) return tracked;
  // Selectors such as pfNames look at the other devices of the node: all of them, as the pools do.
  std::vector<RdmaDevice> all;
  all.reserve(tracked.size());
  for (const auto& [name, t] : tracked) all.push_back(t.dev);
  std::map<std::string, node::TrackedDevice> out;
  for (const auto& [name, t] : tracked) {
    if (node::SelectorsMatch(*selectors_, t.dev, all)) out.emplace(name, t);
  }
  return out;
}

}  // namespace rdmak8s::dra
