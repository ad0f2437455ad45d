// Device plugin configuration: the JSON file given by --config (docs/device-plugin.md).
//
// The schema of a pool's selectors and allocate options is the node core's (node/selectors.h,
// node/allocate.h: the DRA driver reads the same shapes); this file has the pools around them.
// ParseConfig validates strictly: unknown fields, wrong types, bad values, duplicate or empty
// pools are rejected with kInvalidArgument and the JSON path of the problem
// ("$.pools[1].selectors.vendors[0]: \"15b\" is not a 4-digit hex PCI vendor ID").
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node/allocate.h"
#include "node/selectors.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

enum class PoolMode { kShared, kExclusive };

inline constexpr int kAutoCapacity = 0;  // PoolConfig::capacity for "auto"
inline constexpr int kAutoCapacityDefault = 100;
inline constexpr int kMaxCapacity = 1000;

struct PoolConfig {
  std::string name;
  PoolMode mode = PoolMode::kShared;
  int capacity = kAutoCapacity;  // shared mode: IDs per device (kAutoCapacity = "auto")
  node::Selectors selectors;
  node::AllocateOptions allocate;
  friend bool operator==(const PoolConfig&, const PoolConfig&) = default;
};

struct PluginConfig {
  std::string resource_prefix = "rdma";
  std::vector<PoolConfig> pools;
  friend bool operator==(const PluginConfig&, const PluginConfig&) = default;
};

// Parses and validates the JSON text of a config file.
StatusOr<PluginConfig> ParseConfig(std::string_view json_text);
// Reads and parses `path`; errors are prefixed with "config <path>".
StatusOr<PluginConfig> LoadConfigFile(const std::string& path);
// With --cdi every resource is also a CDI kind "<vendor>/<class>" = "<resourcePrefix>/<pool>",
// and CDI is stricter than kubelet: vendor and class start with a letter, end with a letter or
// digit, and hold only [A-Za-z0-9_.-] (CDI spec "Kind"). kInvalidArgument naming the JSON path
// ("$.pools[0].name: \"1x\" cannot be a CDI class (--cdi): it must start with a letter").
Status ValidateForCdi(const PluginConfig& config);

// What two pools' env does in one container, one line each: kubelet merges the env of every
// Allocate answer a container gets and, for a key set twice with different values, keeps one
// (logging "Environment variable has conflicting setting"; the container starts, the other value
// silently lost), and one pool's Allocate cannot see another's. So ncclEnv (NCCL_IB_HCA) and
// ucxEnv (UCX_NET_DEVICES) on several pools are written by none of them (said once per key:
// unset, NCCL/UCX use every device the container has); a pool's RDMAK8S_<POOL>_DEVICES clashes
// only with a pool whose name maps to the same variable; static `env` values clash when they
// differ. Not an error (pods that take one of the pools are fine): the daemon logs these as
// warnings. docs/device-plugin.md#allocate-options.
std::vector<std::string> EnvConflicts(const PluginConfig& config);

std::string_view PoolModeName(PoolMode m);  // "shared" | "exclusive"
// "<prefix>/<pool>"
std::string ResourceName(const PluginConfig& config, const PoolConfig& pool);
// RDMAK8S_<POOL>_DEVICES with the pool name upper-cased and every non-alphanumeric -> '_'.
std::string PoolEnvName(std::string_view pool_name);

}  // namespace rdmak8s::dp
