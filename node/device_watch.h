// DeviceWatch: the node's RDMA devices kept current, the one device watch both agents run (the
// device plugin's daemon on its epoll loop, the DRA driver on a thread of its own). It owns the
// DeviceTracker and its sources (DeviceSources: discovery, rtnetlink link events, kernel uevents
// of RDMA devices, verbs async events), the port-state poll, the periodic full rescan and the
// verbs re-watch, and tells its owner one thing: "the devices changed" (on_change).
//
// What each source means for the tracker is node/tracker_events.h; what is decided here, once
// for both agents:
//   - a batch of events (what one read of one source returns) is applied whole, then published
//     once: kubelet and the scheduler never see half a batch (two ports that went down together
//     are one update, not a first one saying one of them is still up);
//   - after every change the verbs async events are watched on the present devices
//     (AsyncEventsWatch::Update, which reopens only when that set moved): whatever made a device
//     come or go (a uevent, a link event, a port poll's re-read, a verbs event's Refresh, a
//     rescan), the contexts follow; after a fatal event every context is reopened;
//   - re-watch first, then publish: a device announced to kubelet is one whose fatal events are
//     already heard;
//   - a lost event (socket overrun) or a fatal verbs event: a full rescan, nothing else;
//   - the timers (rescan, port poll) are served before events: a steady stream of events must
//     not starve them; a rescan restarts the port poll's period (it read the ports too).
//
// Two faces, the same behaviour:
//   - inside another loop: wait for fds() to be readable and until NextWakeup(); then
//     HandleReadable(fd) and OnTimer(now). Rescan() forces a full rescan now (SIGHUP);
//   - a loop of its own: Run() until Stop(); RequestRescan() from any thread.
// Thread safety: everything on one thread (the loop's), but Stop() and RequestRescan(), which
// any thread may call; on_change runs on that thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "node/async_events_watch.h"
#include "node/device_events.h"
#include "node/device_tracker.h"
#include "node/tracker_events.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/discovery/discovery.h"
#include "rdmak8s/discovery/verbs.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s::node {

// Where a device watch learns about the node's devices. Every source but discovery is optional
// (null: not listened to); node/device_watch_setup.h builds the real ones.
struct DeviceSources {
  // What discovery enriches with (ibv_query_*); kept alive here, before discovery. May be null.
  std::unique_ptr<VerbsQuery> verbs;
  std::unique_ptr<Discovery> discovery;               // required
  std::unique_ptr<LinkMonitor> links;                 // rtnetlink link events
  std::unique_ptr<DeviceEventSource> uevents;         // kernel uevents of RDMA devices
  std::unique_ptr<DeviceEventSource> async_events;    // verbs async events
};

struct DeviceWatchOptions {
  std::string sysfs_root = "/sys";  // the root discovery reads
  std::chrono::seconds rescan_interval{300};
  // Period of the port-state poll (PollPortStates); 0 turns it off.
  std::chrono::milliseconds port_poll_interval{2000};
};

struct DeviceWatchHooks {
  // The devices changed: the tracker as it is now. `rescanned`: a full rescan read it (the
  // device plugin re-checks the node's RDMA netns mode then). Required.
  std::function<void(const DeviceTracker& tracker, bool rescanned)> on_change;
  // How long each full rescan took, whether or not it succeeded (a metric). May be null.
  std::function<void(std::chrono::duration<double> seconds)> on_rescan_timed;
  // Every wakeup of Run's loop (events, timers; at least once per rescan interval): a liveness
  // heartbeat. May be null.
  std::function<void()> on_wakeup;
};

class DeviceWatch {
 public:
  using Clock = std::chrono::steady_clock;

  DeviceWatch(DeviceSources sources, DeviceWatchOptions options, DeviceWatchHooks hooks);
  ~DeviceWatch();
  DeviceWatch(const DeviceWatch&) = delete;
  DeviceWatch& operator=(const DeviceWatch&) = delete;

  // The first full read of the node, watched and published (on_change, rescanned). An error is
  // discovery's as a whole (an unreadable device only turns Unhealthy), or no discovery given.
  Status Start();

  // The sources' fds, for another loop to wait on for readability.
  std::vector<int> fds() const;
  // `fd` was readable: reads what is queued on that source and applies it. False when `fd` is
  // none of the sources'.
  bool HandleReadable(int fd);
  // When OnTimer has something to do next (the rescan, the port poll).
  Clock::time_point NextWakeup() const;
  // Runs the rescan or the port poll if due at `now`.
  void OnTimer(Clock::time_point now);
  // A full rescan now (SIGHUP: the operator's "look again"); the timers start again.
  void Rescan();
  const DeviceTracker& tracker() const { return tracker_; }

  // Waits for events and timers and applies them until Stop(). An error is a broken poll, not
  // an event.
  Status Run();
  void Stop();
  // A full rescan on Run's thread as soon as it wakes.
  void RequestRescan();

 private:
  // What an event batch or a poll means: a rescan, or a re-watch and publish, or nothing.
  void Apply(const TrackerEventOutcome& outcome);
  void ApplyAsyncEvents();
  // After the tracker changed: the verbs re-watch, then on_change.
  void Changed(bool rescanned);

  DeviceSources sources_;
  const DeviceWatchOptions options_;
  DeviceWatchHooks hooks_;
  DeviceTracker tracker_;
  AsyncEventsWatch async_watch_{sources_.async_events.get()};
  Clock::time_point next_rescan_{};
  Clock::time_point next_port_poll_{};
  int stop_fd_ = -1;
  int rescan_fd_ = -1;
};

}  // namespace rdmak8s::node
