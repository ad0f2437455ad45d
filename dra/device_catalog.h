// DeviceCatalog: the RDMA devices this DRA driver can prepare, named as DRA names them
// (pool + device), with their health. It is the one place the kubelet-facing services read
// devices from: NodePrepareResources looks devices up here, the KEP-4680 health stream sends
// All() on every change.
//
// It is fed, not a reader of the node: whoever tracks devices (the device plugin's
// DeviceTracker, driven by health_watcher.h) calls Update() with its whole map after each change.
// Devices are named by DraDeviceNames (device_name.h) over the catalog's whole set, the same
// rule and the same set the ResourceSlices are built from: a ResourceSlice device name must be
// a DNS label, which "mlx5_0" is not. In shared mode (shares > 0) the names of the shares
// ("<name>-<k>") find their device too.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dra/device_name.h"
#include "node/tracked_device.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::dra {

struct CatalogDevice {
  std::string pool;    // pool_name in ResourceSlices and health messages
  std::string device;  // the device's DRA name (DraDeviceNames::Name(dev.name))
  // Find() only: the share the looked-up name stands for (shared mode); nullopt for the whole
  // device.
  std::optional<int> share;
  RdmaDevice dev;
  node::DeviceHealth health;
  node::Presence presence = node::Presence::kPresent;
  int64_t last_updated = 0;  // Unix seconds when `health` last changed (or the device appeared)
};

class DeviceCatalog {
 public:
  using WallClock = std::function<int64_t()>;  // Unix seconds
  // Every device belongs to `pool` (the node's pool: one per node, as DRA drivers usually do).
  // `shares`: 0 exclusive; N > 0 each device is published whole (consumable capacity) and as
  // N shares "<name>-<k>", and Find() resolves all of those names.
  explicit DeviceCatalog(std::string pool, WallClock now = nullptr, int shares = 0);

  // Replaces the catalog with `tracked` (rdma_dev -> device, as DeviceTracker::devices()).
  // Devices kGone are left out (they cannot be prepared and kubelet learns they are gone when
  // they leave the health list). The generation moves on when anything a reader sees changed.
  void Update(const std::map<std::string, node::TrackedDevice>& tracked);

  const std::string& pool() const { return pool_; }
  // The device `device` (a device's DRA name or, in shared mode, one of its shares') of
  // `pool`; nullopt when this node has no such device.
  std::optional<CatalogDevice> Find(const std::string& pool, const std::string& device) const;
  // Every device, by name.
  std::vector<CatalogDevice> All() const;
  uint64_t generation() const;
  // Blocks until generation() differs from `seen`, Shutdown() was called or `deadline` passed;
  // returns the generation then.
  uint64_t WaitForChange(uint64_t seen, std::chrono::steady_clock::time_point deadline) const;
  // Wakes every waiter now and from now on (the driver is stopping).
  void Shutdown();
  bool shut_down() const;

 private:
  const std::string pool_;
  const WallClock now_;
  const int shares_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, CatalogDevice> devices_;  // by DRA device name
  DraDeviceNames names_;                           // of devices_
  uint64_t generation_ = 0;
  bool shut_down_ = false;
};

}  // namespace rdmak8s::dra
