#include "device-plugin/cdi_spec.h"

#include "rdmak8s/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "device-plugin/allocate.h"

namespace rdmak8s::dp {

using nlohmann::json;

std::string BuildCdiSpec(const PoolState& state) {
  json devices = json::array();
  json rdma_cm = json::array();
  for (const auto& [name, tracked] : state.devices) {
    json nodes = json::array();
    for (const auto& c : CharDevicesFor(tracked.dev, state.pool.allocate, state.dev_root)) {
      json node = {{"path", c.container_path}, {"hostPath", c.host_path}, {"permissions", "rw"}};
      if (c.name == "rdma_cm") {
        if (rdma_cm.empty()) rdma_cm.push_back(node);
        continue;
      }
      nodes.push_back(node);
    }
    devices.push_back({{"name", name}, {"containerEdits", {{"deviceNodes", nodes}}}});
  }
  json spec = {{"cdiVersion", "0.5.0"}, {"kind", state.cdi_kind}, {"devices", devices}};
  if (!rdma_cm.empty()) spec["containerEdits"] = {{"deviceNodes", rdma_cm}};
  return spec.dump(2) + "\n";
}

std::string CdiSpecPath(const std::string& cdi_dir, const std::string& resource) {
  std::string base = resource;
  for (char& c : base) {
    if (c == '/') c = '-';
  }
  return cdi_dir + "/rdmak8s-" + base + ".json";
}

Status WriteFileIfChanged(const std::string& path, const std::string& content) {
  {
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str() == content) return Status::Ok();
    }
  }
  return ::rdmak8s::WriteFileAtomic(path, content, 0644);
}

}  // namespace rdmak8s::dp
