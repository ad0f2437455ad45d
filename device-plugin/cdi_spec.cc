#include "device-plugin/cdi_spec.h"

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

Status WriteFileAtomic(const std::string& path, const std::string& content) {
  {
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str() == content) return Status::Ok();
    }
  }
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "open " + tmp);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoError(err, "write " + tmp);
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    int err = errno;
    close(fd);
    unlink(tmp.c_str());
    return ErrnoError(err, "fsync " + tmp);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(err, "rename " + tmp + " to " + path);
  }
  return Status::Ok();
}

}  // namespace rdmak8s::dp
