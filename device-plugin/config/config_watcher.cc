#include "device-plugin/config/config_watcher.h"

#include <sys/inotify.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::dp {

namespace {

namespace fs = std::filesystem;

// The symlink kubelet swaps in a ConfigMap volume (..data -> ..<timestamp>) to update every key
// at once.
constexpr char kConfigMapDataLink[] = "..data";

// The directory inotify watches for the config file: its parent ("/" for "/c.json", "." for a
// bare file name), which rdmak8s::Dirname, being purely lexical, would give as "".
std::string WatchedDir(const std::string& config_path) {
  std::string d = fs::path(config_path).parent_path().string();
  return d.empty() ? "." : d;
}

}  // namespace

PluginConfig DefaultConfig() {
  PluginConfig cfg;
  PoolConfig pool;
  pool.name = "shared";
  pool.mode = PoolMode::kShared;
  cfg.pools.push_back(pool);
  return cfg;
}

ConfigDiff DiffConfig(const PluginConfig& running, const PluginConfig& next) {
  ConfigDiff diff;
  std::map<std::string, const PoolConfig*> by_name;  // the running pools, in name order
  for (const auto& p : running.pools) by_name[p.name] = &p;
  for (const auto& [name, cur] : by_name) {
    // Captured through an init-capture: clang 14 (make tidy) cannot capture a structured binding.
    auto it = std::find_if(next.pools.begin(), next.pools.end(),
                           [&wanted = name](const PoolConfig& p) { return p.name == wanted; });
    if (it == next.pools.end() || it->mode != cur->mode ||
        ResourceName(next, *it) != ResourceName(running, *cur)) {
      diff.stop.push_back(name);
    } else if (!(*it == *cur)) {
      diff.updated[name] = *it;
    }
  }
  for (const auto& p : next.pools) {
    bool running_on = by_name.count(p.name) &&
                      std::find(diff.stop.begin(), diff.stop.end(), p.name) == diff.stop.end();
    if (!running_on) diff.start.push_back(p);
  }
  return diff;
}

ConfigWatcher::ConfigWatcher(std::string config_path, bool cdi)
    : config_path_(std::move(config_path)), cdi_(cdi) {}

StatusOr<PluginConfig> ConfigWatcher::Load() const {
  if (config_path_.empty()) return DefaultConfig();
  RDMAK8S_ASSIGN_OR_RETURN(PluginConfig cfg, LoadConfigFile(config_path_));
  if (cdi_) RDMAK8S_RETURN_IF_ERROR(ValidateForCdi(cfg).Prepend("config " + config_path_));
  return cfg;
}

StatusOr<std::optional<PluginConfig>> ConfigWatcher::Reload(const PluginConfig& running) const {
  if (config_path_.empty()) return std::optional<PluginConfig>();
  RDMAK8S_ASSIGN_OR_RETURN(PluginConfig cfg, Load());
  if (cfg == running) return std::optional<PluginConfig>();
  return std::optional<PluginConfig>(std::move(cfg));
}

Status ConfigWatcher::Watch(int inotify_fd) {
  if (config_path_.empty()) return Status::Ok();
  std::string dir = WatchedDir(config_path_);
  wd_ = inotify_add_watch(inotify_fd, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_MASK_ADD);
  if (wd_ < 0) return ErrnoError(errno, "inotify watch " + dir);
  return Status::Ok();
}

bool ConfigWatcher::Concerns(int wd, uint32_t mask, const std::string& name) const {
  if (wd_ < 0 || wd != wd_ || !(mask & (IN_CLOSE_WRITE | IN_MOVED_TO))) return false;
  return name == Basename(config_path_) || name == kConfigMapDataLink;
}

}  // namespace rdmak8s::dp
