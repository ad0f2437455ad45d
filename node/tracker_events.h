// What the node's events mean for a DeviceTracker: one batch of link events (rtnetlink), kernel
// uevents or verbs async events applied to the tracker, and what the caller must do next. The
// device watch both agents run (device_watch.h) drives its tracker through these and decides
// what the outcomes lead to (when to publish, when to re-watch).
//
// Each function reads what is queued on its source without blocking, logs what it decided
// (once, here), and reports:
//   changed         the tracker was touched: publish (pools, ResourceSlices, health streams);
//   devices_reread  a device was re-read as a whole (it may be new, or back): re-open verbs
//                   async events on the present devices;
//   rescan          events were lost (socket overrun) or a device died (fatal async event):
//                   only a full Rescan knows what changed; nothing else was applied.
// Not thread safe: the tracker's thread.
#pragma once

#include <set>
#include <string>

#include "node/device_events.h"
#include "node/device_tracker.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s::node {

struct TrackerEventOutcome {
  bool changed = false;
  bool devices_reread = false;
  bool rescan = false;
};

// Link events: a tracked device's netdev changed -> its ports re-read (RefreshPorts; the whole
// device when that fails); a netdev nobody tracks that appeared -> the RDMA devices it may bring
// (a hot-plugged function) are read, and only those.
TrackerEventOutcome ApplyLinkEvents(DeviceTracker& tracker, LinkMonitor& links);
// No event at all: re-reads ports/<n>/{state,phys_state} of every present device (RefreshPorts;
// the whole device when that fails) and reports changed when a port's state or a device's
// health moved. What a periodic poll uses to see a port that goes down without a netdev event
// (an IB port; the default deployment runs without verbs async events): a few small sysfs reads
// per port.
TrackerEventOutcome PollPortStates(DeviceTracker& tracker);
// Uevents of RDMA devices: "unregistered" -> Unregistered, anything else -> Refresh.
TrackerEventOutcome ApplyUevents(DeviceTracker& tracker, DeviceEventSource& uevents);

// Verbs async events: the devices to re-read (each with Refresh, publishing after each), or
// rescan when a device reported a fatal error (its context is gone: re-open everything).
struct AsyncEventsOutcome {
  std::set<std::string> devices;
  bool rescan = false;
};
AsyncEventsOutcome ReadAsyncEvents(DeviceEventSource& async_events);

}  // namespace rdmak8s::node
