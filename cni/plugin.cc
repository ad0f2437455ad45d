// RunPlugin (cni/plugin.h): one invocation from its environment and stdin to its answer: the CNI_*
// variables, the node's configuration, the netconf and the paths it may override, the version
// gate of each command, then the command (cni/invocation.h) and its error object.
#include "cni/plugin.h"

#include <exception>

#include "cni/invocation.h"
#include "cni/log.h"
#include "cni/netconf.h"
#include "cni/node_config.h"
#include "cni/spec.h"

namespace rdmak8s::cni {

using nlohmann::json;

namespace {

PluginOutput Run(const PluginOptions& options, const std::function<const char*(const char*)>& getenv,
                 std::string_view stdin_data) {
  Logger log;
  log.Configure(LogLevel::kInfo, "", options.stderr_fd);
  CniError err;
  const std::string peeked = PeekCniVersion(stdin_data);
  const std::string err_version = IsSupportedVersion(peeked) ? peeked : std::string(kLatestVersion);
  auto env = ParseEnv(getenv, &err);
  if (!env) {
    log.Error(err.msg);
    return {1, ErrorJson(err, err_version)};
  }
  // Host paths and the log destination are the node's: from its configuration file, never from
  // the netconf (a NAD is written by namespace users) unless that file allows it.
  NodeConfig node = options.node;
  if (!options.node_config_path.empty()) {
    auto loaded = LoadNodeConfig(options.node_config_path, options.node);
    if (!loaded.ok()) {
      CniError e{loaded.status().code() == StatusCode::kInvalidArgument ||
                         loaded.status().code() == StatusCode::kFailedPrecondition
                     ? kErrInvalidConfig
                     : kErrIo,
                 loaded.status().message(), ""};
      log.Error(e.msg);
      return {1, ErrorJson(e, err_version)};
    }
    node = std::move(*loaded);
  }
  // (after the node configuration: the installer's VERSION check then also checks that file)
  if (env->command == Command::kVersion) return {0, VersionJson(err_version)};
  log.Configure(node.log_level, node.log_file, options.stderr_fd);
  auto conf = ParseNetConf(stdin_data, env->command, &err);
  if (!conf) {
    log.Error(err.msg);
    return {1, ErrorJson(err, err_version)};
  }
  const std::string where = options.node_config_path.empty() ? std::string("the node configuration")
                                                             : options.node_config_path;
  auto resolved = PathsForInvocation(node, *conf, env->command, where);
  if (!resolved.ok()) {
    CniError e{kErrInvalidConfig, resolved.status().message(), ""};
    log.Error(e.msg);
    return {1, ErrorJson(e, err_version)};
  }
  const NodeConfig& paths = resolved->paths;
  if (!resolved->ignored.empty()) log.Warning(resolved->ignored);
  log.Configure(conf->log_level.value_or(node.log_level), paths.log_file, options.stderr_fd);
  log.SetContext(std::string(CommandName(env->command)) + " " + conf->name +
                 (env->container_id.empty() ? "" : " " + env->container_id + "/" + env->ifname));
  auto too_old = [&](std::string_view min) {
    CniError e{kErrIncompatibleVersion,
               "config version " + conf->cni_version + " does not allow " +
                   std::string(CommandName(env->command)) + " (needs " + std::string(min) + "+)",
               ""};
    log.Error(e.msg);
    return PluginOutput{1, ErrorJson(e, conf->cni_version)};
  };
  if (env->command == Command::kCheck && CompareVersions(conf->cni_version, "0.4.0") < 0) {
    return too_old("0.4.0");
  }
  if ((env->command == Command::kGc || env->command == Command::kStatus) &&
      CompareVersions(conf->cni_version, "1.1.0") < 0) {
    return too_old("1.1.0");
  }
  Invocation inv(options, *env, *conf, paths, resolved->sysfs_as_is, log);
  json result;
  Status s;
  switch (env->command) {
    case Command::kAdd: s = inv.Add(&result); break;
    case Command::kDel: s = inv.Del(); break;
    case Command::kCheck: s = inv.Check(); break;
    case Command::kGc: s = inv.Gc(); break;
    case Command::kStatus: s = inv.StatusCmd(); break;
    case Command::kVersion: break;
  }
  if (!s.ok()) {
    log.Error(s.message());
    return {1, ErrorJson({inv.code(), s.message(), std::string(StatusCodeName(s.code()))},
                         conf->cni_version)};
  }
  if (env->command == Command::kAdd) return {0, result.dump()};
  return {0, ""};
}

}  // namespace

PluginOutput RunPlugin(const PluginOptions& options,
                       const std::function<const char*(const char*)>& getenv,
                       std::string_view stdin_data) {
  try {
    return Run(options, getenv, stdin_data);
  } catch (const std::exception& e) {  // a library threw where we did not expect it
    return {1, ErrorJson({kErrIo, std::string("internal error: ") + e.what(), ""}, kLatestVersion)};
  }
}

}  // namespace rdmak8s::cni
