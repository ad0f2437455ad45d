// Device plugin configuration: the JSON file given by --config (docs/device-plugin.md).
//
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

#include <nlohmann/json_fwd.hpp>

#include "rdmak8s/status.h"

namespace rdmak8s::dp {

enum class PoolMode { kShared, kExclusive };

// Lists are OR within a selector; selectors present are ANDed. An absent selector matches all.
struct Selectors {
  std::vector<std::string> vendors;       // lower-case hex, no 0x: "15b3"
  std::vector<std::string> device_ids;    // lower-case hex, no 0x: "101b"
  // The parent's driver ("mlx5_core", "ice", "bnxt_en") or the RDMA driver ("mlx5_ib",
  // "irdma", "bnxt_re"); "rxe", "siw" for soft devices. RdmaDevice::driver / rdma_driver.
  std::vector<std::string> drivers;
  std::vector<std::string> pci_addresses; // "0000:3b:00.0"
  std::vector<std::string> rdma_devices;  // "mlx5_0"
  std::vector<std::string> netdevs;       // "ens1f0"
  std::vector<std::string> link_types;    // "infiniband" | "ethernet"
  std::vector<std::string> transports;    // "ib" | "roce" | "iwarp"
  std::vector<int> numa_nodes;
  std::optional<bool> is_vf;
  std::vector<std::string> pf_names;      // netdev of the PF (a VF's PF, or the PF itself)
  friend bool operator==(const Selectors&, const Selectors&) = default;
};

// What Allocate injects besides the device nodes every device of the transport needs.
struct AllocateOptions {
  bool nccl_env = false;   // NCCL_IB_HCA=<=dev,dev>
  bool ucx_env = false;    // UCX_NET_DEVICES=<dev:port,...>
  bool issm = false;       // InfiniBand: also issmN (lets the pod act as/for a subnet manager)
  bool roce_umad = false;  // RoCE: also umadN when the kernel created one
  std::map<std::string, std::string> extra_env;  // static env added to every container
  friend bool operator==(const AllocateOptions&, const AllocateOptions&) = default;
};

inline constexpr int kAutoCapacity = 0;  // PoolConfig::capacity for "auto"
inline constexpr int kAutoCapacityDefault = 100;
inline constexpr int kMaxCapacity = 1000;

struct PoolConfig {
  std::string name;
  PoolMode mode = PoolMode::kShared;
  int capacity = kAutoCapacity;  // shared mode: IDs per device (kAutoCapacity = "auto")
  Selectors selectors;
  AllocateOptions allocate;
  friend bool operator==(const PoolConfig&, const PoolConfig&) = default;
};

struct PluginConfig {
  std::string resource_prefix = "rdma";
  std::vector<PoolConfig> pools;
  friend bool operator==(const PluginConfig&, const PluginConfig&) = default;
};

// Parses and validates the JSON text of a config file.
StatusOr<PluginConfig> ParseConfig(std::string_view json_text);
// One selectors object (a pool's "selectors"), validated as ParseConfig does; errors name the
// offending key under `path` ("$.selectors.vendors[0]: ..."). Also the DRA driver's --devices.
StatusOr<Selectors> ParseSelectors(const nlohmann::json& j, const std::string& path);
// The JSON text of one "allocate" object alone (the DRA driver's opaque claim parameters take
// the same shape); errors name the JSON path from "$" ("$.ncclEnv: must be true or false").
StatusOr<AllocateOptions> ParseAllocateOptions(std::string_view json_text);
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
