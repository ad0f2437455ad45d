// Preferred allocation, step 3: greedy PCIe closeness from the must-include devices or from
// seeds, one per parent bridge (pcie_closeness.h).
#include "device-plugin/preferred_allocation/pcie_closeness.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>

namespace rdmak8s::dp::preferred_allocation {
namespace {

constexpr size_t kMaxSeeds = 16;

// Step 3 from one start: greedy PCIe closeness. Picks positions in `devs` (repeats allowed once
// every device is used), after `start` (the must-include devices) or from `seed`; the distance
// sums to the chosen set are kept up to date per pick, and `cost` adds each pick's.
std::vector<size_t> Grow(const std::vector<Dev>& devs, const std::vector<Dev>& start,
                         std::optional<size_t> seed, size_t need, long* cost) {
  std::vector<size_t> picked;
  std::vector<long> dist(devs.size(), 0);
  std::vector<size_t> taken(devs.size(), 0);
  std::vector<char> dev_used(devs.size(), 0);
  for (size_t k = 0; k < devs.size(); ++k) {
    for (const auto& b : start) {
      dist[k] += Distance(devs[k], b);
      if (SameDevice(devs[k], b)) dev_used[k] = 1;
    }
  }
  // The next device to take: one not used up; one not used yet before one used; then the
  // closest; then the first. take(k) finds the one after k in the loop that adds k's distances.
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  auto better = [&](size_t j, size_t best) {
    if (taken[j] >= devs[j].count) return false;
    return best == kNone || std::make_tuple(dev_used[j], dist[j]) < std::make_tuple(dev_used[best], dist[best]);
  };
  auto take = [&](size_t k) {
    *cost += dist[k];
    picked.push_back(k);
    taken[k]++;
    dev_used[k] = 1;
    size_t best = kNone;
    for (size_t j = 0; j < devs.size(); ++j) {
      dist[j] += Distance(devs[j], devs[k]);
      if (better(j, best)) best = j;
    }
    return best;
  };
  size_t next = kNone;
  if (seed) {
    next = take(*seed);
  } else {
    for (size_t j = 0; j < devs.size(); ++j) {
      if (better(j, next)) next = j;
    }
  }
  while (picked.size() < need && next != kNone) next = take(next);
  return picked;
}

// The seeds step 3 tries with nothing chosen yet: the first device under each parent bridge
// (`parents` of them, PreparedDevices::parent); of the parents with enough devices for the whole
// request, only the first; at most kMaxSeeds.
std::vector<size_t> Seeds(const std::vector<Dev>& devs, size_t parents_total, size_t need) {
  struct Parent {
    size_t first = 0, members = 0;
  };
  std::vector<Parent> parents;  // in order of their first device
  std::vector<int32_t> parent_at(parents_total, -1);  // by PreparedDevices::parent
  for (size_t k = 0; k < devs.size(); ++k) {
    const int32_t p = devs[k].parent;  // -1: no tree, a parent of its own
    int32_t* at = p >= 0 ? &parent_at[static_cast<size_t>(p)] : nullptr;
    if (at == nullptr || *at < 0) {
      if (at != nullptr) *at = static_cast<int32_t>(parents.size());
      parents.push_back(Parent{k, 0});
    }
    parents[at != nullptr ? static_cast<size_t>(*at) : parents.size() - 1].members++;
  }
  std::vector<size_t> seeds;
  bool big_seeded = false;
  for (const Parent& p : parents) {
    bool big = p.members >= need;
    if (big && big_seeded) continue;
    big_seeded |= big;
    seeds.push_back(p.first);
    if (seeds.size() >= kMaxSeeds) break;
  }
  return seeds;
}

}  // namespace

// Step 3: the picked devices (positions in `devs`, one per ID): grown from the must-include
// devices when there are some, else from each seed, the tightest set winning (the first of
// equal ones).
std::vector<size_t> PickDevices(const std::vector<Dev>& devs, const std::vector<Dev>& base,
                                size_t parents_total, size_t need) {
  if (!base.empty()) {
    long cost = 0;
    return Grow(devs, base, std::nullopt, need, &cost);
  }
  std::vector<size_t> picked;
  if (devs.empty()) return picked;
  long best_cost = std::numeric_limits<long>::max();
  for (size_t s : Seeds(devs, parents_total, need)) {
    long cost = 0;
    auto set = Grow(devs, {}, s, need, &cost);
    if (cost < best_cost) {
      best_cost = cost;
      picked = std::move(set);
    }
  }
  return picked;
}

}  // namespace rdmak8s::dp::preferred_allocation
