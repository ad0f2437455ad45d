#include "dra/api/health_change_limit.h"

#include <set>

namespace rdmak8s::dra {

std::vector<DeviceInput> HealthChangeLimit::Apply(std::vector<DeviceInput> wanted, Clock::time_point now) {
  next_release_.reset();
  held_ = 0;
  std::set<std::string> present;
  for (DeviceInput& in : wanted) {
    const std::string& dev = in.device.name;
    present.insert(dev);
    auto [it, first] = devices_.try_emplace(dev);
    Published& p = it->second;
    if (first) {
      p.healthy = in.healthy;
      p.reason = in.unhealthy_reason;
      continue;
    }
    while (!p.changes.empty() && p.changes.front() <= now - options_.window) p.changes.pop_front();
    const bool changed = in.healthy != p.healthy || (!in.healthy && in.unhealthy_reason != p.reason);
    if (!changed) {
      p.held.reset();
      continue;
    }
    if (static_cast<int>(p.changes.size()) < options_.max_changes) {
      p.changes.push_back(now);
      p.healthy = in.healthy;
      p.reason = in.unhealthy_reason;
      p.held.reset();
      ++let_through_;
      continue;
    }
    const std::pair<bool, std::string> wanted_health{in.healthy, in.unhealthy_reason};
    if (p.held != wanted_health) {
      p.held = wanted_health;
      ++held_total_;
    }
    ++held_;
    in.healthy = p.healthy;
    in.unhealthy_reason = p.reason;
    const Clock::time_point release = p.changes.front() + options_.window;
    if (!next_release_ || release < *next_release_) next_release_ = release;
  }
  for (auto it = devices_.begin(); it != devices_.end();) {
    it = present.count(it->first) ? std::next(it) : devices_.erase(it);
  }
  return wanted;
}

}  // namespace rdmak8s::dra
