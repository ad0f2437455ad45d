// What a container gets for a set of RDMA devices, whichever API asked (the device plugin's
// Allocate, a DRA claim's CDI spec): the allocate options and their schema, the char devices by
// transport, the env.
//
// Device nodes per transport (host path under `dev_root`, container path always the canonical
// /dev/infiniband/<name>):
//   ib:    uverbsN, every umadN of the device, rdma_cm; issmN only with allocate.issm
//   roce:  uverbsN, rdma_cm; umadN only with allocate.roceUmad and when the kernel made one
//   iwarp: uverbsN, rdma_cm
// Env: NCCL_IB_HCA==<dev,dev> and UCX_NET_DEVICES=<dev:port,...> when opted in; allocate.env as
// given. Pure functions over values.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::node {

// What an allocation injects besides the device nodes every device of the transport needs.
struct AllocateOptions {
  bool nccl_env = false;   // NCCL_IB_HCA=<=dev,dev>
  bool ucx_env = false;    // UCX_NET_DEVICES=<dev:port,...>
  bool issm = false;       // InfiniBand: also issmN (lets the pod act as/for a subnet manager)
  bool roce_umad = false;  // RoCE: also umadN when the kernel created one
  std::map<std::string, std::string> extra_env;  // static env added to every container
  // DRA claims only (ParseAllocateOptions; a pool's "allocate" refuses it): the containers get
  // their RoCE v2 GID index (rdmak8s/records/claim_gid_spec.h), filled in by the CNI after its ADD.
  bool gid_index_env = false;
  friend bool operator==(const AllocateOptions&, const AllocateOptions&) = default;
};

// One "allocate" object (a device-plugin pool's "allocate"), validated strictly: unknown keys,
// wrong types and invalid env names are kInvalidArgument naming the key under `path`
// ("$.pools[0].allocate.ncclEnv: not a boolean (number)").
StatusOr<AllocateOptions> ParseAllocate(const nlohmann::json& j, const std::string& path);
// The JSON text of one "allocate" object alone (the DRA driver's opaque claim parameters take
// the same shape, plus the DRA-only "gidIndexEnv" boolean); errors name the JSON path from "$"
// ("$.ncclEnv: not a boolean (number)").
StatusOr<AllocateOptions> ParseAllocateOptions(std::string_view json_text);

struct CharDeviceRef {
  std::string name;            // "uverbs0"
  std::string host_path;       // "<dev_root>/infiniband/uverbs0"
  std::string container_path;  // "/dev/infiniband/uverbs0"
};

// The char devices `dev` needs in a container under `options`, rdma_cm included when present.
std::vector<CharDeviceRef> CharDevicesFor(const RdmaDevice& dev, const AllocateOptions& options,
                                          const std::string& dev_root);

// The env every allocation of `devs` gets under `options`: options.extra_env, then
// NCCL_IB_HCA==<dev,dev> and UCX_NET_DEVICES=<dev:port,...> when opted in (the device plugin
// adds its pool's RDMAK8S_<POOL>_DEVICES on top; the DRA driver uses this as is).
std::map<std::string, std::string> AllocationEnv(const std::vector<const RdmaDevice*>& devs,
                                                 const AllocateOptions& options);

}  // namespace rdmak8s::node
