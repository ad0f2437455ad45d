// The device watch's shared flags and real sources (device_watch_setup.h).
#include "node/device_watch_setup.h"

#include <cstdint>

#include <spdlog/spdlog.h>

#include "node/uevent.h"

namespace rdmak8s::node {

void AddDeviceWatchFlags(CLI::App& app, DeviceWatchFlags& flags) {
  app.add_option("--rescan-interval", flags.rescan_s,
                 "seconds between safety-net full rescans (events drive everything else)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  app.add_option("--port-poll-interval", flags.port_poll_s,
                 "seconds between re-reads of every device's port state files (a port that goes "
                 "down without a netdev event, e.g. InfiniBand without verbs); 0 disables")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_flag("--no-verbs", flags.no_verbs,
               "do not open devices with libibverbs (no enrichment, no async events)");
}

DeviceWatchOptions DeviceWatchOptionsFrom(const DeviceWatchFlags& flags, std::string sysfs_root) {
  DeviceWatchOptions o;
  o.sysfs_root = std::move(sysfs_root);
  o.rescan_interval = std::chrono::seconds(flags.rescan_s);
  o.port_poll_interval =
      std::chrono::milliseconds(static_cast<int64_t>(flags.port_poll_s * 1000));
  return o;
}

DeviceSources BuildDeviceSources(const DeviceWatchFlags& flags, const std::string& sysfs_root) {
  DeviceSources s;
  if (!flags.no_verbs) s.verbs = NewIbverbsQuery();
  s.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sysfs_root, s.verbs.get()});
  if (auto links = NewLinkMonitor(); links.ok()) {
    s.links = std::move(links).value();
  } else {
    SPDLOG_WARN("link events unavailable ({}): health follows the periodic rescan",
                links.status().message());
  }
  if (auto uevents = NewKernelUeventSource(); uevents.ok()) {
    s.uevents = std::move(uevents).value();
  } else {
    SPDLOG_WARN("uevents unavailable ({}): RDMA devices registered without a new netdev are "
                "found by the periodic rescan",
                uevents.status().message());
  }
  if (!flags.no_verbs) {
    auto events = NewIbverbsEventSource();
    if (events.ok()) s.async_events = std::move(events).value();
  }
  return s;
}

}  // namespace rdmak8s::node
