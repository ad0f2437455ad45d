#include "device-plugin/tracker_events.h"

#include <vector>

#include <spdlog/spdlog.h>

namespace rdmak8s::dp {

TrackerEventOutcome ApplyLinkEvents(DeviceTracker& tracker, LinkMonitor& links) {
  std::set<std::string> ports_only, reread;
  std::vector<std::string> unknown;
  Status s = links.ReadEvents([&](const LinkEvent& ev) {
    std::vector<std::string> on = tracker.DevicesOnNetdev(ev.link.name);
    ports_only.insert(on.begin(), on.end());
    if (on.empty() && ev.type == LinkEvent::Type::kNew) unknown.push_back(ev.link.name);
  });
  if (!s.ok()) {
    SPDLOG_WARN("link events: {}: full rescan", s.message());
    return {.rescan = true};
  }
  // A netdev nobody tracks (every pod's veth) is read for the RDMA devices it may bring (a
  // hot-plugged function), and only those: no rescan, no verbs context reopened.
  for (const auto& n : unknown) {
    for (auto& d : tracker.RdmaDevicesOfNetdev(n)) reread.insert(std::move(d));
  }
  // A link event changes link and port state, not the device's shape: re-read just those
  // (a device that vanished or reads oddly gets the full re-read).
  for (const auto& d : ports_only) {
    if (reread.count(d)) continue;
    if (Status ps = tracker.RefreshPorts(d); !ps.ok()) {
      SPDLOG_DEBUG("{}: full re-read", ps.message());
      reread.insert(d);
    }
  }
  for (const auto& d : reread) tracker.Refresh(d);
  return {.changed = !ports_only.empty() || !reread.empty(), .devices_reread = !reread.empty()};
}

TrackerEventOutcome ApplyUevents(DeviceTracker& tracker, DeviceEventSource& uevents) {
  std::vector<DeviceEvent> evs;
  Status s = uevents.ReadEvents([&](const DeviceEvent& ev) { evs.push_back(ev); });
  if (!s.ok()) {
    // Lost events (ENOBUFS): only a full rescan knows what changed.
    SPDLOG_WARN("uevents: {}: full rescan", s.message());
    return {.rescan = true};
  }
  for (const auto& ev : evs) {
    SPDLOG_INFO("{} {} (uevent)", ev.rdma_dev, ev.what);
    if (ev.what == "unregistered") {
      tracker.Unregistered(ev.rdma_dev);
    } else {
      tracker.Refresh(ev.rdma_dev);
    }
  }
  return {.changed = !evs.empty(), .devices_reread = !evs.empty()};
}

AsyncEventsOutcome ReadAsyncEvents(DeviceEventSource& async_events) {
  AsyncEventsOutcome out;
  Status s = async_events.ReadEvents([&](const DeviceEvent& ev) {
    SPDLOG_INFO("async event on {} port {}: {}", ev.rdma_dev, ev.port_num, ev.what);
    out.devices.insert(ev.rdma_dev);
    out.rescan |= ev.what == "device fatal" || ev.what == "local catastrophic error";
  });
  if (!s.ok()) SPDLOG_WARN("async events: {}", s.message());
  return out;
}

}  // namespace rdmak8s::dp
