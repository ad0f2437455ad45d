#include "node/tracker_events.h"

#include <tuple>
#include <vector>

#include <spdlog/spdlog.h>

namespace rdmak8s::node {

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

namespace {

// What a port poll can change: each port's link state, and the health and presence it gives
// (a snapshot, not a copy of the device's GID tables).
struct LinkSnapshot {
  std::vector<std::tuple<uint32_t, PortState, uint32_t>> ports;
  DeviceHealth health;
  Presence presence = Presence::kPresent;
  bool operator==(const LinkSnapshot&) const = default;
};

LinkSnapshot Snapshot(const TrackedDevice& t) {
  LinkSnapshot s{{}, t.health, t.presence};
  s.ports.reserve(t.dev.ports.size());
  for (const Port& p : t.dev.ports) s.ports.emplace_back(p.port_num, p.state, p.phys_state);
  return s;
}

}  // namespace

TrackerEventOutcome PollPortStates(DeviceTracker& tracker) {
  TrackerEventOutcome out;
  for (const auto& d : tracker.Present()) {
    auto it = tracker.devices().find(d);
    if (it == tracker.devices().end()) continue;
    const LinkSnapshot before = Snapshot(it->second);
    if (Status s = tracker.RefreshPorts(d); !s.ok()) {
      SPDLOG_DEBUG("port poll: {}: full re-read", s.message());
      // A device whose attributes keep failing is re-read at every poll; it is published only
      // when what kubelet sees moved.
      tracker.Refresh(d);
      auto after = tracker.devices().find(d);
      if (after == tracker.devices().end() || Snapshot(after->second) != before) {
        out.changed = true;
        out.devices_reread = true;
      }
      continue;
    }
    auto after = tracker.devices().find(d);
    if (after == tracker.devices().end() || Snapshot(after->second) != before) out.changed = true;
  }
  return out;
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

}  // namespace rdmak8s::node
