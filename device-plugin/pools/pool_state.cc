#include "device-plugin/pools/pool_state.h"

#include <algorithm>

#include "rdmak8s/device/device_id.h"

namespace rdmak8s::dp {

const node::TrackedDevice* PoolState::ForId(const std::string& id) const {
  auto it = id_to_dev.find(id);
  if (it == id_to_dev.end()) return nullptr;
  auto d = devices.find(it->second);
  return d == devices.end() ? nullptr : &d->second;
}

int EffectiveCapacity(const PoolConfig& pool, const RdmaDevice& dev) {
  if (pool.mode == PoolMode::kExclusive) return 1;
  if (pool.capacity != kAutoCapacity) return pool.capacity;
  int cap = kAutoCapacityDefault;
  if (dev.verbs) {
    if (dev.verbs->max_pd > 0) cap = std::min<int64_t>(cap, dev.verbs->max_pd);
    if (dev.verbs->max_qp > 0) cap = std::min<int64_t>(cap, dev.verbs->max_qp);
  }
  return std::max(cap, 1);
}

std::string ExclusiveId(const RdmaDevice& dev) {
  return ExclusiveDeviceId(dev.name, dev.bus_device_id(), !dev.bus_peers.empty());
}

std::vector<std::string> DeviceIds(const PoolConfig& pool, const RdmaDevice& dev) {
  if (pool.mode == PoolMode::kExclusive) return {ExclusiveId(dev)};
  std::vector<std::string> ids;
  int cap = EffectiveCapacity(pool, dev);
  ids.reserve(cap);
  for (int k = 0; k < cap; ++k) ids.push_back(SharedDeviceId(dev.name, k));
  return ids;
}

void FillIds(PoolState& state) {
  state.ids.clear();
  state.id_to_dev.clear();
  // Two RDMA devices on one bus device (a driver registering several per function) would share
  // an exclusive ID: those keep their RDMA device names, so every ID names exactly one device.
  // ExclusiveId already counts the devices discovery saw on the function, in any pool (what the
  // CNI counts when it resolves the ID); this also covers devices tracked without that count.
  std::map<std::string, int> bus_ids;
  if (state.pool.mode == PoolMode::kExclusive) {
    for (const auto& [name, tracked] : state.devices) ++bus_ids[ExclusiveId(tracked.dev)];
  }
  for (const auto& [name, tracked] : state.devices) {
    std::vector<std::string> ids = DeviceIds(state.pool, tracked.dev);
    if (state.pool.mode == PoolMode::kExclusive && bus_ids[ids.front()] > 1) ids = {name};
    for (auto& id : ids) {
      state.id_to_dev[id] = name;
      state.ids.push_back(std::move(id));
    }
  }
}

std::vector<AdvertisedId> Advertised(const PoolState& state) {
  std::vector<AdvertisedId> out;
  out.reserve(state.ids.size());
  for (const auto& id : state.ids) {
    const node::TrackedDevice* t = state.ForId(id);
    out.push_back({id, t != nullptr && t->health.healthy, t != nullptr ? t->dev.numa_node() : -1});
  }
  return out;
}

std::vector<std::string> DevicesOf(const PoolState& state, const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  for (const auto& id : ids) {
    auto it = state.id_to_dev.find(id);
    if (it == state.id_to_dev.end()) continue;
    if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  return out;
}

}  // namespace rdmak8s::dp
