// SliceSync: keeps this node's ResourceSlices saying what the DeviceCatalog holds. The loop the
// driver runs on its own thread: publish at start, then again after every change of the
// catalog's generation (hot-plug, port state, health, rename: whatever HealthWatcher feeds it).
// A publish that fails is retried with exponential backoff (each retry lists the server's
// slices again, so whatever the failure left half-written is finished); changes that arrive
// meanwhile are folded into that retry. The loop ends when the catalog is shut down (the
// driver is stopping); deleting the slices on uninstall is the caller's (SlicePublisher::
// DeleteAll), after Run returned.
//
// Thread safety: Run on one thread; the accessors from any.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "dra/api/slice_devices.h"
#include "dra/api/slice_publisher.h"
#include "dra/device_catalog.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dra {

// The publisher's input for the catalog's devices: the PCIe root of each (pcie_root.h, read
// under `sysfs_root`), unhealthy ones marked with the catalog's reason. Devices moved into a
// pod's network namespace are still published (they are allocated, not gone). Roots that
// cannot be read go to *notes.
std::vector<DeviceInput> CatalogDeviceInputs(const std::vector<CatalogDevice>& devices,
                                             const std::string& sysfs_root,
                                             std::vector<std::string>* notes);

struct SliceSyncOptions {
  std::string sysfs_root = "/sys";
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  // Called after each publish attempt with its result (tests and logs). May be null.
  std::function<void(const Status&)> on_publish;
};

class SliceSync {
 public:
  // `publisher` and `catalog` are not owned and must outlive the loop.
  SliceSync(SlicePublisher* publisher, const DeviceCatalog* catalog, SliceSyncOptions options);

  // Publishes until catalog->shut_down(). Errors are logged (once per failed attempt) and
  // retried, never returned: the driver keeps preparing claims while the API server is away.
  void Run();

  // Successful publishes so far, and the catalog generation the last one published.
  int publishes() const { return publishes_.load(); }
  uint64_t published_generation() const { return published_generation_.load(); }

 private:
  // Waits until `deadline` or the catalog's shutdown, whatever changes meanwhile.
  void SleepUntil(std::chrono::steady_clock::time_point deadline) const;

  SlicePublisher* publisher_;
  const DeviceCatalog* catalog_;
  const SliceSyncOptions options_;
  std::atomic<int> publishes_{0};
  std::atomic<uint64_t> published_generation_{0};
};

}  // namespace rdmak8s::dra
