// Which devices a verbs async event source (device_events.h) listens on, kept equal to the
// tracker's present devices, the rule the device watch (device_watch.h) applies after every
// change: Watch() is called only when the present devices differ from what the source last
// listened on (it reopens every context, so a rescan that changed nothing must not), and again
// after a fatal event even when the list is the same (the source dropped that device's context:
// what is back must be reopened). A failed Watch is forgotten too, so the next Update retries.
// A source starts listening on nothing, so no device present means no Watch call.
// Not thread safe: the event loop's thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "node/device_events.h"
#include "node/device_tracker.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

class AsyncEventsWatch {
 public:
  // `source` (not owned, may be null: no async events, Update does nothing) must outlive this.
  explicit AsyncEventsWatch(DeviceEventSource* source) : source_(source) {}

  // Watch(tracker.Present()) unless that is what the source already listens on; the source's
  // error as is (the caller logs it).
  Status Update(const DeviceTracker& tracker);
  // A fatal event dropped a device's context: the next Update calls Watch whatever the list.
  void Forget() { watched_.reset(); }

 private:
  DeviceEventSource* source_;
  // What the source listens on: nothing before the first Watch; none after Forget or a failure.
  std::optional<std::vector<std::string>> watched_ = std::vector<std::string>{};
};

}  // namespace rdmak8s::node
