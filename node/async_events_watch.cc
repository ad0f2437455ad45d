#include "node/async_events_watch.h"

#include <utility>

namespace rdmak8s::node {

Status AsyncEventsWatch::Update(const DeviceTracker& tracker) {
  if (source_ == nullptr) return Status::Ok();
  std::vector<std::string> present = tracker.Present();
  if (watched_ && *watched_ == present) return Status::Ok();
  Status s = source_->Watch(present);
  if (!s.ok()) {
    watched_.reset();
    return s;
  }
  watched_ = std::move(present);
  return Status::Ok();
}

}  // namespace rdmak8s::node
