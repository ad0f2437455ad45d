// The device plugin's configuration over time: loading the --config file (or the default without
// one), watching it for changes, and the diff that decides what a new configuration does to the
// running pools.
//
// The watch is on the file's directory, not the file: editors and ConfigMaps replace the file
// (kubelet swaps the "..data" symlink of a ConfigMap volume), which a watch on the old inode
// would never see.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "device-plugin/config/config.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

// Without --config: one shared pool "shared" with every RDMA device.
PluginConfig DefaultConfig();

// What moving from the running configuration to the next does to each pool.
//   kept:      same name, resource and mode, same settings: nothing to do;
//   updated:   same name, resource and mode, other settings (capacity, selectors, allocate
//              options): the pool keeps its server and kubelet its ListAndWatch stream, and gets
//              a new device list on it (kubelet marks every device of a resource Unhealthy when
//              its stream ends, so a restart for such a change would flap the whole pool);
//   restarted: the name stays but the resource (the prefix) or the mode changes: stopped, then
//              started anew; it is in both `stop` and `start`;
//   removed:   in `stop` only; added: in `start` only.
struct ConfigDiff {
  std::vector<std::string> stop;               // pool names, in name order
  std::map<std::string, PoolConfig> updated;   // pool name -> its new settings
  std::vector<PoolConfig> start;               // in the next config's order
};
ConfigDiff DiffConfig(const PluginConfig& running, const PluginConfig& next);

// ConfigWatcher: the --config file's path, its load, and its inotify watch.
// Thread safety: none (the daemon's event loop).
class ConfigWatcher {
 public:
  // `config_path` empty: no file (DefaultConfig, nothing to watch). `cdi`: configs are also
  // validated for CDI (ValidateForCdi).
  ConfigWatcher(std::string config_path, bool cdi);

  bool has_file() const { return !config_path_.empty(); }
  const std::string& path() const { return config_path_; }

  // The configuration now: DefaultConfig() without a file, else the file parsed and validated.
  // An error names the file ("config <path>: ...") when it cannot be read or is invalid.
  StatusOr<PluginConfig> Load() const;
  // The file loaded again (a reload: SIGHUP, Reload(), a Concerns() event) against `running`:
  // nullopt when it is the same configuration, else the new one; an error (as Load's) means the
  // file is rejected and `running` stays. Without a file, always nullopt.
  StatusOr<std::optional<PluginConfig>> Reload(const PluginConfig& running) const;

  // Adds a watch of the file's directory to `inotify_fd` (no-op without a file). IN_MASK_ADD:
  // should `inotify_fd` already watch that directory, it is the same watch, whose mask must keep
  // what the other watcher asked for (inotify(7)). An error names the dir.
  Status Watch(int inotify_fd);
  // True when the inotify event (`wd`, `mask`, `name`) may have changed the file: a write closed
  // or a rename onto the file's name or onto the ConfigMap "..data" link, in its directory.
  bool Concerns(int wd, uint32_t mask, const std::string& name) const;

 private:
  std::string config_path_;
  bool cdi_;
  int wd_ = -1;
};

}  // namespace rdmak8s::dp
