#include "node/cdi_spec.h"

#include "rdmak8s/base/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>


namespace rdmak8s::node {

using nlohmann::json;

std::string BuildCdiSpecDocument(const std::string& kind, const std::vector<CdiDevice>& devices) {
  json out_devices = json::array();
  json rdma_cm = json::array();
  for (const auto& d : devices) {
    json nodes = json::array();
    for (const auto& c : d.char_devices) {
      json node = {{"path", c.container_path}, {"hostPath", c.host_path}, {"permissions", "rw"}};
      if (c.name == "rdma_cm") {
        if (rdma_cm.empty()) rdma_cm.push_back(node);
        continue;
      }
      nodes.push_back(node);
    }
    json edits = {{"deviceNodes", nodes}};
    if (!d.env.empty()) {
      json env = json::array();
      for (const auto& [k, v] : d.env) env.push_back(k + "=" + v);
      edits["env"] = env;
    }
    out_devices.push_back({{"name", d.name}, {"containerEdits", edits}});
  }
  json spec = {{"cdiVersion", "0.5.0"}, {"kind", kind}, {"devices", out_devices}};
  if (!rdma_cm.empty()) spec["containerEdits"] = {{"deviceNodes", rdma_cm}};
  return spec.dump(2) + "\n";
}

Status WriteFileIfChanged(const std::string& path, const std::string& content) {
  // Compared through the one safe reader: a FIFO planted at the path would block a plain open,
  // and a symlink would make us compare (and report as ours) a file elsewhere.
  StatusOr<std::string> current = ReadRegularFile(path, kMaxCdiSpecBytes);
  if (current.ok() && *current == content) return Status::Ok();
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) {
    return current.status().Prepend("CDI spec " + path + " (not replaced)");
  }
  return ::rdmak8s::WriteFileAtomic(path, content, 0644);
}

}  // namespace rdmak8s::node
