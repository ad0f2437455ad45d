// HealthWatcher: keeps the DeviceCatalog in step with the node, event-driven, with the node
// core's machinery: a node::DeviceTracker over Discovery, fed link events (rtnetlink), kernel
// uevents and verbs async events through node/tracker_events.h, exactly as the device plugin's
// daemon does; after every change the tracker's devices go to DeviceCatalog::Update
// (and so to the health stream and to NodePrepareResources), those the DeviceFilter takes
// (device_filter.h). Every `port_poll_interval` (0: off) each device's port state files are
// re-read (node::PollPortStates), as the daemon's --port-poll-interval does: an InfiniBand port
// that goes down without a netdev event, in the default deployment without verbs, turns its
// device Unhealthy within seconds, not at the rescan. A slow periodic rescan is the safety net,
// as in the daemon.
//
// Every source is optional (null: not listened to); tests pass a uevent source on a socketpair.
// Thread safety: Start and Run on one thread; Stop and RequestRescan from any.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "dra/device_catalog.h"
#include "dra/device_filter.h"
#include "node/device_events.h"
#include "node/device_tracker.h"
#include "node/tracker_events.h"
#include "rdmak8s/discovery.h"
#include "rdmak8s/route_netlink.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dra {

struct HealthWatcherDeps {
  std::unique_ptr<Discovery> discovery;                  // required
  std::unique_ptr<LinkMonitor> links;                    // optional
  std::unique_ptr<node::DeviceEventSource> uevents;        // optional
  std::unique_ptr<node::DeviceEventSource> async_events;   // optional
  DeviceFilter filter;  // which devices go to the catalog (--devices); default: all
  // Called on every wakeup of Run's loop (events, rescans; at least once per rescan interval):
  // the driver's liveness heartbeat (metrics.h). May be null.
  std::function<void()> on_wakeup;
};

class HealthWatcher {
 public:
  // `catalog` is not owned and must outlive the watcher; `sysfs_root` is the root `discovery`
  // reads.
  HealthWatcher(HealthWatcherDeps deps, std::string sysfs_root, DeviceCatalog* catalog,
                std::chrono::seconds rescan_interval,
                std::chrono::milliseconds port_poll_interval = std::chrono::milliseconds::zero());
  ~HealthWatcher();
  HealthWatcher(const HealthWatcher&) = delete;
  HealthWatcher& operator=(const HealthWatcher&) = delete;

  // The first full read of the node, published to the catalog. An error is discovery's as a
  // whole (an unreadable device only turns Unhealthy).
  Status Start();
  // Waits for events and applies them until Stop(). An error is a broken poll, not an event.
  Status Run();
  void Stop();
  // A full rescan on Run's thread as soon as it wakes (SIGHUP: the operator's "look again").
  void RequestRescan();

 private:
  void Rescan();
  void Publish();
  void WatchAsync();
  // What a tracker event, or a poll of the ports, means for the catalog: a rescan, a publish
  // (watching the async events again when devices were re-read), or nothing.
  void Apply(const node::TrackerEventOutcome& outcome);

  HealthWatcherDeps deps_;
  node::DeviceTracker tracker_;
  DeviceCatalog* catalog_;
  const std::chrono::seconds rescan_interval_;
  const std::chrono::milliseconds port_poll_interval_;
  int stop_fd_ = -1;
  int rescan_fd_ = -1;
};

}  // namespace rdmak8s::dra
