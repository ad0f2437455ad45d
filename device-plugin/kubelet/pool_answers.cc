#include "device-plugin/kubelet/pool_answers.h"

namespace rdmak8s::dp {

v1beta1::ListAndWatchResponse ToListAndWatch(const PoolState& state) {
  v1beta1::ListAndWatchResponse resp;
  for (const AdvertisedId& a : Advertised(state)) {
    auto* d = resp.add_devices();
    d->set_id(a.id);
    d->set_health(a.healthy ? kHealthy : kUnhealthy);
    if (a.numa_node >= 0) d->mutable_topology()->add_nodes()->set_id(a.numa_node);
  }
  return resp;
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
