// How often one device's published health may change: at most `max_changes` in any `window`,
// so that a flapping port does not become a ResourceSlice write (and a scheduler and eviction
// controller reaction) per flap. A change past the bound is held: the device keeps the health
// last let through until the window lets the change through, and next_release() says when the
// caller should publish again. The last health always gets out; only its timing is bounded.
//
// A device seen for the first time passes as it is (its first health is not a change). A device
// gone from the input is forgotten.
//
// Pure code: the caller passes the time, so tests step it. Not thread safe: the slice loop owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dra/api/slice_devices.h"

namespace rdmak8s::dra {

class HealthChangeLimit {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    int max_changes = 4;                        // per device, in any window
    std::chrono::milliseconds window{60'000};   // a minute
  };

  explicit HealthChangeLimit(Options options) : options_(options) {}

  // `wanted` as it may be published at `now` (same order): a device whose health (healthy,
  // reason) differs from what was last let through is let through when fewer than max_changes
  // of its changes were let through in (now - window, now], else shown with the health last let
  // through.
  std::vector<DeviceInput> Apply(std::vector<DeviceInput> wanted, Clock::time_point now);

  // When the earliest held change may go out; nullopt when nothing is held.
  std::optional<Clock::time_point> next_release() const { return next_release_; }
  // Devices whose change is held after the last Apply.
  int held() const { return held_; }
  // Changes let through and changes held (counted once per held health of a device), so far.
  uint64_t changes_let_through() const { return let_through_; }
  uint64_t changes_held() const { return held_total_; }

 private:
  struct Published {
    bool healthy = true;
    std::string reason;
    std::deque<Clock::time_point> changes;  // let through, within the window, oldest first
    std::optional<std::pair<bool, std::string>> held;  // the health held back, if any
  };

  Options options_;
  std::map<std::string, Published> devices_;  // by rdma_dev
  std::optional<Clock::time_point> next_release_;
  int held_ = 0;
  uint64_t let_through_ = 0;
  uint64_t held_total_ = 0;
};

}  // namespace rdmak8s::dra
