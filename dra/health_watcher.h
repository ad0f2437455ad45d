// HealthWatcher: keeps the DeviceCatalog in step with the node through the device watch both
// agents run (node/device_watch.h: the tracker, link events, uevents, verbs async events, the
// port-state poll, the periodic rescan, each decided there once). Every change it reports goes
// to DeviceCatalog::Update (and so to the health stream and to NodePrepareResources), the
// devices the DeviceFilter takes (device_filter.h). Run() is the watch's own loop, on a thread
// of the driver's.
//
// Thread safety: Start and Run on one thread; Stop and RequestRescan from any.
#pragma once

#include <functional>

#include "dra/device_catalog.h"
#include "dra/device_filter.h"
#include "node/device_watch.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

class HealthWatcher {
 public:
  // `catalog` is not owned and must outlive the watcher. `filter`: which devices go to the
  // catalog (--devices; default all). `on_wakeup`: every wakeup of Run's loop, at least once per
  // rescan interval (the driver's liveness heartbeat, metrics.h); may be null.
  HealthWatcher(node::DeviceSources sources, node::DeviceWatchOptions options, DeviceFilter filter,
                DeviceCatalog* catalog, std::function<void()> on_wakeup = nullptr);

  // The first full read of the node, published to the catalog. An error is discovery's as a
  // whole (an unreadable device only turns Unhealthy).
  Status Start() { return watch_.Start(); }
  // Waits for events and applies them until Stop(). An error is a broken poll, not an event.
  Status Run() { return watch_.Run(); }
  void Stop() { watch_.Stop(); }
  // A full rescan on Run's thread as soon as it wakes (SIGHUP: the operator's "look again").
  void RequestRescan() { watch_.RequestRescan(); }

 private:
  DeviceFilter filter_;
  DeviceCatalog* catalog_;
  node::DeviceWatch watch_;
};

}  // namespace rdmak8s::dra
