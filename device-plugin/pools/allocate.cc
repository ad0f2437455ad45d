#include "device-plugin/pools/allocate.h"

#include <algorithm>

namespace rdmak8s::dp {

std::vector<std::string> DevicesOf(const PoolState& state, const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  for (const auto& id : ids) {
    auto it = state.id_to_dev.find(id);
    if (it == state.id_to_dev.end()) continue;
    if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  return out;
}

std::set<std::string> SharedDeviceListEnv(const PluginConfig& config, const PoolConfig& pool) {
  std::set<std::string> out;
  for (const auto& other : config.pools) {
    if (other.name == pool.name) continue;
    if (pool.allocate.nccl_env && other.allocate.nccl_env) out.insert("NCCL_IB_HCA");
    if (pool.allocate.ucx_env && other.allocate.ucx_env) out.insert("UCX_NET_DEVICES");
  }
  return out;
}

StatusOr<v1beta1::ContainerAllocateResponse> BuildContainerResponse(
    const PoolState& state, const std::vector<std::string>& ids) {
  if (ids.empty()) return InvalidArgumentError("no device IDs requested");
  for (const auto& id : ids) {
    const node::TrackedDevice* t = state.ForId(id);
    if (t == nullptr) {
      return InvalidArgumentError("unknown device ID \"" + id + "\" for " + state.resource);
    }
    if (!t->health.healthy) {
      return FailedPreconditionError("device " + t->dev.name + " (ID " + id + ") is unhealthy: " +
                                     t->health.reason);
    }
  }
  v1beta1::ContainerAllocateResponse resp;
  std::vector<std::string> devs = DevicesOf(state, ids);
  std::vector<const RdmaDevice*> models;
  std::string dev_list;
  for (const auto& name : devs) {
    const RdmaDevice& dev = state.devices.at(name).dev;
    models.push_back(&dev);
    dev_list += (dev_list.empty() ? "" : ",") + name;
    if (state.cdi) {
      resp.add_cdi_devices()->set_name(state.cdi_kind + "=" + name);
      continue;
    }
    for (const auto& c : node::CharDevicesFor(dev, state.pool.allocate, state.dev_root)) {
      bool dup = false;
      for (const auto& existing : resp.devices()) dup = dup || existing.container_path() == c.container_path;
      if (dup) continue;  // rdma_cm is shared by every device
      auto* spec = resp.add_devices();
      spec->set_container_path(c.container_path);
      spec->set_host_path(c.host_path);
      spec->set_permissions("rw");
    }
  }
  auto& envs = *resp.mutable_envs();
  for (const auto& [k, v] : node::AllocationEnv(models, state.pool.allocate)) {
    if (!state.env_left_out.contains(k)) envs[k] = v;
  }
  envs[PoolEnvName(state.pool.name)] = dev_list;
  return resp;
}

}  // namespace rdmak8s::dp
