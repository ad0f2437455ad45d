// Preferred allocation, the algorithm's steps (device-plugin/preferred_allocation.h): must-include
// IDs, the pass over the IDs, NUMA nodes, PCIe closeness from seeds, and which IDs of the picked
// devices; and the public PreferredAllocation overloads.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "device-plugin/device_name_index.h"
#include "device-plugin/preferred_allocation.h"
#include "device-plugin/preferred_allocation/count.h"
#include "device-plugin/preferred_allocation/distance.h"
#include "device-plugin/preferred_allocation/scan.h"

namespace rdmak8s::dp {
namespace {

using preferred_allocation::CountDevices;
using preferred_allocation::Dev;
using preferred_allocation::DevOf;
using preferred_allocation::Distance;
using preferred_allocation::ForEachOnDevices;
using preferred_allocation::SameDevice;

constexpr size_t kMaxSeeds = 16;

// The algorithm, on IDs held as std::string (tests, the LocalityFn overload) or as views into a
// request (the gRPC server: no copy of 100,000 strings).
template <typename Id>
std::vector<std::string> Prefer(const std::vector<Id>& available,
                                const std::vector<std::string>& must_include, int size,
                                const AllocationTopology& topology) {
  std::vector<std::string> result;
  std::unordered_set<std::string_view> must;
  for (const auto& id : must_include) {
    if (must.insert(id).second) result.push_back(id);
  }
  if (size <= static_cast<int>(result.size())) return result;
  const size_t need = static_cast<size_t>(size) - result.size();

  // Step 0, the one pass over the IDs: each available ID's device. Devices [0, n) are the
  // topology's; an ID of no known device becomes a device of its own after them. On a big pool
  // this pass is the request's cost: a shared pool's is DeviceNameIndex's own loop.
  const size_t n = topology.devices.size();
  DevOf dev_of(available.size(), n);
  std::vector<size_t> count(n + 1, 0);  // [n] for now: IDs of no known device
  dev_of.Visit([&](auto* out) {
    using D = std::remove_pointer_t<decltype(out)>;
    if (topology.by_name) {
      topology.by_name->DevicesOfSharedIds(available.data(), available.size(), static_cast<D>(n), out);
    } else {
      for (size_t i = 0; i < available.size(); ++i) {
        const int d = topology.device_of ? topology.device_of(available[i]) : -1;
        out[i] = static_cast<D>(d < 0 || static_cast<size_t>(d) >= n ? n : static_cast<size_t>(d));
      }
    }
    CountDevices(out, available.size(), &count);
  });
  // The must-include IDs' devices (their locality counts, whether or not they are available).
  // An available ID that is a must-include one is on the same device: only the IDs of those
  // devices are compared with them, and leave the count of their device.
  std::vector<uint32_t> must_dev;  // per ID of `result`: its device, n for none known
  must_dev.reserve(result.size());
  for (const auto& id : result) {
    const int d = DeviceOf(topology, id);
    must_dev.push_back(static_cast<uint32_t>(d < 0 || static_cast<size_t>(d) >= n ? n : static_cast<size_t>(d)));
  }
  if (!must.empty()) {
    std::vector<uint32_t> devs = must_dev;
    std::sort(devs.begin(), devs.end());
    devs.erase(std::unique(devs.begin(), devs.end()), devs.end());
    dev_of.Visit([&](auto* dev) {
      using D = std::remove_pointer_t<decltype(dev)>;
      ForEachOnDevices(dev, available.size(), n + 1, devs, [&](size_t i) {
        if (!must.count(available[i])) return;
        count[dev[i]]--;
        dev[i] = DevOf::kMust<D>;
      });
    });
  }
  // Each ID of no known device becomes a device of its own, in the order given: device n + u
  // is the ID at unknown_at[u] (dev_of keeps n for it).
  std::vector<IdLocality> unknown;
  std::vector<size_t> unknown_at;
  const size_t unknown_ids = count[n];
  count.pop_back();
  if (unknown_ids > 0) {
    unknown.reserve(unknown_ids);
    dev_of.Visit([&](const auto* dev) {
      for (size_t i = 0; i < available.size(); ++i) {
        if (dev[i] != n) continue;
        unknown.push_back(IdLocality{std::string(available[i]), -1, {}});
        unknown_at.push_back(i);
        count.push_back(1);
      }
    });
  }
  auto loc_of = [&](size_t d) -> const IdLocality& {
    return d < n ? topology.devices[d] : unknown[d - n];
  };
  // Interned PCIe paths and the prepared devices: the topology's own (PoolTopology builds them
  // once per state), else derived here (a topology assembled by hand, as tests do).
  std::vector<std::vector<int>> own_paths;
  const std::vector<std::vector<int>>& paths =
      topology.paths.size() == n ? topology.paths : (own_paths = InternPaths(topology.devices));
  PreparedDevices own_prepared;
  const bool prepared = !topology.prepared.nodes.empty() && topology.prepared.node_of.size() == n;
  const PreparedDevices& prep =
      prepared ? topology.prepared : (own_prepared = PrepareDevices(topology.devices, paths));
  // A device (of the topology, or of `unknown`: d >= n) as the later steps see it.
  auto dev_at = [&](size_t d, size_t ids) {
    if (d >= n) return Dev(&unknown[d - n], ids, -1, -1, nullptr, 0);
    return Dev(&topology.devices[d], ids, static_cast<int32_t>(prep.same_name[d]), prep.parent[d],
               prep.path_elems.data() + prep.path_start[d], prep.path_start[d + 1] - prep.path_start[d]);
  };
  // Devices of the must-include IDs (IDs of no known device: devices of their own).
  std::vector<IdLocality> must_unknown;
  must_unknown.reserve(result.size());
  std::vector<Dev> base;
  for (size_t k = 0; k < result.size(); ++k) {
    if (must_dev[k] < n) {
      base.push_back(dev_at(must_dev[k], 0));
    } else {
      must_unknown.push_back(IdLocality{result[k], -1, {}});
      base.push_back(Dev(&must_unknown.back(), 0, -1, -1, nullptr, 0));
    }
  }

  // Step 2: NUMA nodes, as their place in prep.nodes (ascending, so the lower node number is the
  // lower place; -1, unknown, among them).
  const auto unknown_node = static_cast<uint32_t>(
      std::lower_bound(prep.nodes.begin(), prep.nodes.end(), -1) - prep.nodes.begin());
  auto node_of = [&](size_t d) { return d < n ? prep.node_of[d] : unknown_node; };
  std::vector<size_t> per_node(prep.nodes.size(), 0);
  for (size_t d = 0; d < count.size(); ++d) per_node[node_of(d)] += count[d];
  std::vector<char> used(prep.nodes.size(), 0);
  for (uint32_t d : must_dev) used[node_of(d)] = 1;
  auto in_used = [&] {
    size_t total = 0;
    for (size_t s = 0; s < used.size(); ++s) total += used[s] ? per_node[s] : 0;
    return total;
  };
  while (in_used() < need) {
    size_t have = in_used();
    std::optional<size_t> best_fit, largest;
    auto fit_key = [&](size_t s) {
      return std::make_tuple(prep.nodes[s] < 0, per_node[s], prep.nodes[s]);
    };
    auto big_key = [&](size_t s) {
      return std::make_tuple(prep.nodes[s] < 0, -static_cast<long>(per_node[s]), prep.nodes[s]);
    };
    for (size_t s = 0; s < per_node.size(); ++s) {
      const size_t c = per_node[s];
      if (used[s] || c == 0) continue;  // a node without IDs is none
      if (have + c >= need && (!best_fit || fit_key(s) < fit_key(*best_fit))) best_fit = s;
      if (!largest || big_key(s) < big_key(*largest)) largest = s;
    }
    if (best_fit) {
      used[*best_fit] = 1;
    } else if (largest) {
      used[*largest] = 1;
    } else {
      break;  // not enough IDs at all: return what there is
    }
  }

  // The devices that may give IDs, in natural order of their names (ties: by number).
  std::vector<size_t> order;
  for (size_t d = 0; d < count.size(); ++d) {
    if (count[d] > 0 && used[node_of(d)]) order.push_back(d);
  }
  auto natural = [&](size_t x, size_t y) {
    if (x < n && y < n) return prep.rank[x] < prep.rank[y];
    const std::string& a = loc_of(x).rdma_dev;
    const std::string& b = loc_of(y).rdma_dev;
    if (a != b) return NaturalLess(a, b);
    return x < y;
  };
  // The topology's devices come in rank order when PoolTopology built it: checked in one pass.
  if (!std::is_sorted(order.begin(), order.end(), natural)) std::sort(order.begin(), order.end(), natural);
  std::vector<Dev> devs(order.size());
  for (size_t k = 0; k < order.size(); ++k) devs[k] = dev_at(order[k], count[order[k]]);

  // Step 3: greedy PCIe closeness. Picks device positions in `devs` (repeats allowed once every
  // device is used); the distance sums to the chosen set are kept up to date per pick.
  auto grow = [&](const std::vector<Dev>& start, std::optional<size_t> seed, long* cost) {
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
  };

  std::vector<size_t> picked;
  if (!base.empty()) {
    long cost = 0;
    picked = grow(base, std::nullopt, &cost);
  } else if (!devs.empty()) {
    // Seeds: the first device under each parent bridge; of the parents with enough devices for
    // the whole request, only the first.
    struct Parent {
      size_t first = 0, members = 0;
    };
    std::vector<Parent> parents;  // in order of their first device
    std::vector<int32_t> parent_at(prep.parents, -1);  // by PreparedDevices::parent
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
    long best_cost = std::numeric_limits<long>::max();
    for (size_t s : seeds) {
      long cost = 0;
      auto set = grow({}, s, &cost);
      if (cost < best_cost) {
        best_cost = cost;
        picked = std::move(set);
      }
    }
  }

  // Which IDs: per picked device, its naturally first available IDs. One more pass over the
  // IDs, touching only those of picked devices.
  std::vector<int32_t> list_of(count.size(), -1);  // by device index: its place in `lists`
  std::vector<std::vector<std::string_view>> lists;
  std::vector<size_t> picks;  // by place in `lists`: how many of its IDs
  for (size_t k : picked) {
    int32_t& l = list_of[order[k]];
    if (l < 0) {
      l = static_cast<int32_t>(lists.size());
      lists.emplace_back().reserve(count[order[k]]);  // every available ID of the device
      picks.push_back(0);
    }
    picks[static_cast<size_t>(l)]++;
  }
  for (size_t u = 0; u < unknown_at.size(); ++u) {
    const int32_t l = list_of[n + u];
    if (l >= 0) lists[static_cast<size_t>(l)].emplace_back(available[unknown_at[u]]);
  }
  std::vector<uint32_t> wanted;  // the picked devices of the topology
  for (size_t d = 0; d < n; ++d) {
    if (list_of[d] >= 0) wanted.push_back(static_cast<uint32_t>(d));
  }
  dev_of.Visit([&](const auto* dev) {
    ForEachOnDevices(dev, available.size(), n, wanted, [&](size_t i) {
      lists[static_cast<size_t>(list_of[dev[i]])].emplace_back(available[i]);
    });
  });
  for (size_t l = 0; l < lists.size(); ++l) {
    auto& v = lists[l];
    // The IDs' bytes are scattered and out of L1 and L2 by now: their misses all at once, not
    // one per comparison (800 of the bench's IDs: 21 -> 9 us from a cold cache).
    for (std::string_view id : v) __builtin_prefetch(id.data());
    if (picks[l] == 1) {  // the common case: its naturally first ID, one pass
      v = {*std::min_element(v.begin(), v.end(), NaturalLess)};
      continue;
    }
    std::sort(v.begin(), v.end(), NaturalLess);
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  std::vector<size_t> next(lists.size(), 0);
  for (size_t k : picked) {
    const auto l = static_cast<size_t>(list_of[order[k]]);
    if (next[l] < lists[l].size()) result.emplace_back(lists[l][next[l]++]);
  }
  return result;
}

}  // namespace

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const AllocationTopology& topology) {
  return Prefer(available, must_include, size, topology);
}

std::vector<std::string> PreferredAllocation(const std::vector<std::string_view>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const AllocationTopology& topology) {
  return Prefer(available, must_include, size, topology);
}

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const LocalityFn& locality) {
  AllocationTopology topo;
  std::unordered_map<std::string, int> index;  // rdma_dev -> device
  std::unordered_map<std::string, int> by_id;
  auto add = [&](const std::string& id) {
    if (by_id.count(id)) return;
    auto l = locality(id);
    if (!l) {
      by_id[id] = -1;
      return;
    }
    auto [it, fresh] = index.emplace(l->rdma_dev, static_cast<int>(topo.devices.size()));
    if (fresh) topo.devices.push_back(*l);
    by_id[id] = it->second;
  };
  for (const auto& id : available) add(id);
  for (const auto& id : must_include) add(id);
  topo.device_of = [&by_id](std::string_view id) {
    auto it = by_id.find(std::string(id));
    return it == by_id.end() ? -1 : it->second;
  };
  return PreferredAllocation(available, must_include, size, topo);
}

}  // namespace rdmak8s::dp
