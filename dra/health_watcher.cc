// HealthWatcher (health_watcher.h): the device watch's changes, filtered, into the catalog.
#include "dra/health_watcher.h"

#include <utility>

namespace rdmak8s::dra {

HealthWatcher::HealthWatcher(node::DeviceSources sources, node::DeviceWatchOptions options,
                             DeviceFilter filter, DeviceCatalog* catalog,
                             std::function<void()> on_wakeup)
    : filter_(std::move(filter)),
      catalog_(catalog),
      watch_(std::move(sources), std::move(options),
             node::DeviceWatchHooks{
                 [this](const node::DeviceTracker& tracker, bool /*rescanned*/) {
                   catalog_->Update(filter_.Apply(tracker.devices()));
                 },
                 nullptr, std::move(on_wakeup)}) {}

}  // namespace rdmak8s::dra
