#include "cni/node_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::cni {

using nlohmann::json;

namespace {

// The node's configuration through the one strict reader: "$.<key>: <what>", prefixed with
// "node configuration <path>" by the caller.
StatusOr<NodeConfig> ParseFields(const json& j, NodeConfig c) {
  RDMAK8S_RETURN_IF_ERROR(json_reader::CheckKeys(
      j, "$",
      {"sysfsRoot", "configfsRoot", "stateDir", "podDevicesDir", "podResourcesSocket", "cdiDir",
       "logFile", "logLevel", "allowNetconfOverrides"}));
  auto path = [&](const char* key, std::string& out) -> Status {
    if (!j.contains(key) || j[key].is_null()) return Status::Ok();
    RDMAK8S_ASSIGN_OR_RETURN(std::string s, json_reader::StringAt(j, "$", key));
    if ((std::string_view(key) != "logFile" || !s.empty()) && (s.empty() || s[0] != '/')) {
      return json_reader::Invalid(json_reader::Field("$", key),
                                  "must be an absolute path, not \"" + s + "\"");
    }
    out = s;
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(path("sysfsRoot", c.sysfs_root));
  RDMAK8S_RETURN_IF_ERROR(path("configfsRoot", c.configfs_root));
  RDMAK8S_RETURN_IF_ERROR(path("stateDir", c.state_dir));
  RDMAK8S_RETURN_IF_ERROR(path("podDevicesDir", c.pod_devices_dir));
  RDMAK8S_RETURN_IF_ERROR(path("podResourcesSocket", c.pod_resources_socket));
  RDMAK8S_RETURN_IF_ERROR(path("cdiDir", c.cdi_dir));
  RDMAK8S_RETURN_IF_ERROR(path("logFile", c.log_file));
  if (j.contains("logLevel") && !j["logLevel"].is_null()) {
    RDMAK8S_ASSIGN_OR_RETURN(std::string level, json_reader::StringAt(j, "$", "logLevel"));
    std::optional<LogLevel> l = ParseLogLevel(level);
    if (!l) {
      return json_reader::Invalid("$.logLevel", "must be error, warning, info or debug, not \"" +
                                                    level + "\"");
    }
    c.log_level = *l;
  }
  RDMAK8S_ASSIGN_OR_RETURN(c.allow_netconf_overrides,
                           json_reader::BoolAt(j, "$", "allowNetconfOverrides",
                                               c.allow_netconf_overrides));
  return c;
}

StatusOr<NodeConfig> Parse(const std::string& path, const std::string& data, NodeConfig c) {
  RDMAK8S_ASSIGN_OR_RETURN(const json j, json_reader::Parse(data, "node configuration " + path));
  auto out = ParseFields(j, std::move(c));
  if (!out.ok()) return out.status().Prepend("node configuration " + path);
  return out;
}

}  // namespace

StatusOr<NodeConfig> LoadNodeConfig(const std::string& path, const NodeConfig& defaults) {
  // The runtime execs the plugin in a directory of its choosing: a relative path (from
  // RDMAK8S_CNI_NODE_CONFIG) would name a different file per runtime, or none.
  if (path.empty() || path.front() != '/') {
    return InvalidArgumentError("node configuration \"" + path + "\" (" + kNodeConfigEnv +
                                "): must be an absolute path");
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return defaults;
    return ErrnoError(errno, "open node configuration " + path);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return ErrnoError(e, "stat node configuration " + path);
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return FailedPreconditionError(
        "node configuration " + path + ": must be a regular file owned by uid " +
        std::to_string(geteuid()) + " that group and others cannot write (it is " +
        (S_ISREG(st.st_mode) ? "a file" : "not a regular file") + " of uid " +
        std::to_string(st.st_uid) + ", mode " + mode + ")");
  }
  auto data = ReadFd(fd, path, 1 << 20);
  close(fd);
  if (!data.ok()) return data.status();
  try {
    return Parse(path, *data, defaults);
  } catch (const std::exception& e) {  // nlohmann type errors we did not foresee
    return InvalidArgumentError("node configuration " + path + ": " + e.what());
  }
}

std::vector<std::string> NetconfHostPathKeys(const NetConf& conf) {
  std::vector<std::string> keys;
  if (!conf.sysfs_root.empty()) keys.push_back("sysfsRoot");
  if (!conf.configfs_root.empty()) keys.push_back("configfsRoot");
  if (!conf.state_dir.empty()) keys.push_back("stateDir");
  if (!conf.log_file.empty()) keys.push_back("logFile");
  return keys;
}

namespace {

// Whether two directory names name the same directory, lexically ("/sys" and "/sys/").
bool SameDir(const std::string& a, const std::string& b) {
  auto norm = [](const std::string& p) {
    std::string n = std::filesystem::path(p).lexically_normal().string();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    return n;
  };
  return norm(a) == norm(b);
}

}  // namespace

StatusOr<InvocationPaths> PathsForInvocation(const NodeConfig& node, const NetConf& conf,
                                             Command command, const std::string& where) {
  InvocationPaths out;
  out.paths = node;
  const std::vector<std::string> keys = NetconfHostPathKeys(conf);
  if (keys.empty()) return out;
  if (node.allow_netconf_overrides) {
    if (!conf.sysfs_root.empty()) {
      out.sysfs_as_is = !SameDir(conf.sysfs_root, node.sysfs_root);  // the node's own value changes nothing
      out.paths.sysfs_root = conf.sysfs_root;
    }
    if (!conf.configfs_root.empty()) out.paths.configfs_root = conf.configfs_root;
    if (!conf.state_dir.empty()) out.paths.state_dir = conf.state_dir;
    if (!conf.log_file.empty()) out.paths.log_file = conf.log_file;
    return out;
  }
  if (command == Command::kDel) {
    out.ignored = "netconf sets " + Join(keys) + ", host paths that are the node's: ignored, DEL " +
                  "uses the node's (" + where + " does not allow netconf overrides)";
    return out;
  }
  std::vector<std::string> quoted;
  for (const auto& k : keys) quoted.push_back("\"" + k + "\"");
  return InvalidArgumentError(
      std::string(keys.size() == 1 ? "netconf key " : "netconf keys ") + Join(quoted) +
      (keys.size() == 1 ? " is" : " are") + " not allowed: host paths and the log file " +
      "(sysfsRoot, configfsRoot, stateDir, logFile) are the node's, set in " + where +
      ", which does not allow netconf overrides (allowNetconfOverrides)");
}

}  // namespace rdmak8s::cni
