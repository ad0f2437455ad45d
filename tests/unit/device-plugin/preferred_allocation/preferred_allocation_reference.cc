// The reference implementation of preferred allocation (see the header): obviously correct,
// slow on purpose.
#include "preferred_allocation_reference.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

namespace rdmak8s::dp::testing {
namespace {

constexpr size_t kMaxSeeds = 16;  // the documented limit on seeds

// A device as the algorithm sees it. An ID on no known device is a device of its own, named by
// the ID, on unknown NUMA (-1) with no PCIe path.
struct RefDevice {
  std::string name;
  int numa = -1;
  std::vector<std::string> path;
  std::vector<std::string> ids;  // its available IDs that are not must-include, with repeats
};

// Hops in the PCIe tree: up to the deepest common ancestor and down again; 0 for one device;
// farther than anything on the tree (64) when either has no path.
int Distance(const RefDevice& a, const RefDevice& b) {
  if (a.name == b.name) return 0;
  if (a.path.empty() || b.path.empty()) return 64;
  size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common]) {
    ++common;
  }
  return static_cast<int>(a.path.size() - common + b.path.size() - common);
}

std::vector<std::string> ParentOf(const RefDevice& d) {
  return std::vector<std::string>(d.path.begin(), d.path.end() - (d.path.empty() ? 0 : 1));
}

// Step 3 from one start: picks (positions in `devs`) one ID at a time, each time the device not
// used up that is not used yet before one used, then the closest to everything chosen so far
// (`base` and the picks), then the first. `seed`, when given, is the first pick. `cost` sums each
// pick's distance to what was chosen before it.
std::vector<size_t> Grow(const std::vector<RefDevice>& devs, const std::vector<RefDevice>& base,
                         const size_t* seed, size_t need, long* cost) {
  std::vector<size_t> picked;
  std::vector<size_t> taken(devs.size(), 0);
  auto used = [&](size_t j) {
    for (const RefDevice& b : base) {
      if (b.name == devs[j].name) return true;
    }
    return std::find(picked.begin(), picked.end(), j) != picked.end();
  };
  auto dist = [&](size_t j) {
    long sum = 0;
    for (const RefDevice& b : base) sum += Distance(devs[j], b);
    for (size_t k : picked) sum += Distance(devs[j], devs[k]);
    return sum;
  };
  while (picked.size() < need) {
    std::optional<size_t> best;
    if (seed != nullptr && picked.empty()) {
      best = *seed;
    } else {
      for (size_t j = 0; j < devs.size(); ++j) {
        if (taken[j] >= devs[j].ids.size()) continue;
        if (!best || std::make_tuple(used(j), dist(j)) < std::make_tuple(used(*best), dist(*best))) {
          best = j;
        }
      }
    }
    if (!best) break;
    *cost += dist(*best);
    taken[*best]++;
    picked.push_back(*best);
  }
  return picked;
}

}  // namespace

std::vector<std::string> ReferencePreferredAllocation(const std::vector<std::string>& available,
                                                      const std::vector<std::string>& must_include,
                                                      int size, const AllocationTopology& topology) {
  // 1. Every must-include ID, in the order given, duplicates dropped.
  std::vector<std::string> result;
  for (const std::string& id : must_include) {
    if (std::find(result.begin(), result.end(), id) == result.end()) result.push_back(id);
  }
  if (size <= static_cast<int>(result.size())) return result;
  const size_t need = static_cast<size_t>(size) - result.size();

  auto device_of = [&](const std::string& id) -> std::optional<size_t> {
    const int d = DeviceOf(topology, id);
    if (d < 0 || static_cast<size_t>(d) >= topology.devices.size()) return std::nullopt;
    return static_cast<size_t>(d);
  };
  auto as_device = [&](size_t d) {
    const IdLocality& l = topology.devices[d];
    return RefDevice{l.rdma_dev, l.numa_node, l.pcie_path, {}};
  };

  // The devices: the topology's, then one per available ID of no known device, in order.
  std::vector<RefDevice> devices;
  for (size_t d = 0; d < topology.devices.size(); ++d) devices.push_back(as_device(d));
  for (const std::string& id : available) {
    if (std::find(result.begin(), result.end(), id) != result.end()) continue;  // must-include
    if (std::optional<size_t> d = device_of(id)) {
      devices[*d].ids.push_back(id);
    } else {
      devices.push_back(RefDevice{id, -1, {}, {id}});
    }
  }
  std::vector<RefDevice> base;  // the must-include IDs' devices
  for (const std::string& id : result) {
    std::optional<size_t> d = device_of(id);
    base.push_back(d ? as_device(*d) : RefDevice{id, -1, {}, {}});
  }

  // 2. NUMA nodes: those of must-include IDs are free; then the smallest node that holds what is
  // still needed, else the one with most IDs, repeated. Ties: lower number; -1 taken last.
  std::set<int> nodes{-1};
  for (const IdLocality& l : topology.devices) nodes.insert(l.numa_node);
  auto ids_on = [&](int node) {
    size_t c = 0;
    for (const RefDevice& d : devices) c += d.numa == node ? d.ids.size() : 0;
    return c;
  };
  std::set<int> used;
  for (const RefDevice& b : base) used.insert(b.numa);
  auto have = [&] {
    size_t c = 0;
    for (int node : used) c += ids_on(node);
    return c;
  };
  while (have() < need) {
    std::optional<int> best_fit, largest;
    for (int node : nodes) {
      const size_t c = ids_on(node);
      if (used.count(node) != 0 || c == 0) continue;
      auto fit_key = [&](int s) { return std::make_tuple(s < 0, ids_on(s), s); };
      auto big_key = [&](int s) { return std::make_tuple(s < 0, -static_cast<long>(ids_on(s)), s); };
      if (have() + c >= need && (!best_fit || fit_key(node) < fit_key(*best_fit))) best_fit = node;
      if (!largest || big_key(node) < big_key(*largest)) largest = node;
    }
    if (!best_fit && !largest) break;
    used.insert(best_fit ? *best_fit : *largest);
  }

  // The devices that may give IDs, in natural order of their names (ties: as listed above).
  std::vector<RefDevice> devs;
  for (const RefDevice& d : devices) {
    if (!d.ids.empty() && used.count(d.numa) != 0) devs.push_back(d);
  }
  std::stable_sort(devs.begin(), devs.end(), [](const RefDevice& a, const RefDevice& b) {
    return a.name != b.name && NaturalLess(a.name, b.name);
  });

  // 3. PCIe closeness; with nothing chosen yet, from each seed, keeping the cheapest (the first
  // of equal ones). Seeds: the first device under each parent bridge (no path: a parent of its
  // own), of the parents with at least `need` devices only the first, at most 16.
  std::vector<size_t> picked;
  if (!base.empty()) {
    long cost = 0;
    picked = Grow(devs, base, nullptr, need, &cost);
  } else {
    std::vector<std::vector<std::string>> parents;  // of the devices with a path, in order
    std::vector<size_t> seeds;
    bool big_seeded = false;
    for (size_t k = 0; k < devs.size() && seeds.size() < kMaxSeeds; ++k) {
      if (!devs[k].path.empty()) {
        const std::vector<std::string> parent = ParentOf(devs[k]);
        if (std::find(parents.begin(), parents.end(), parent) != parents.end()) continue;
        parents.push_back(parent);
      }
      size_t members = 0;
      for (const RefDevice& d : devs) {
        members += devs[k].path.empty() ? (&d == &devs[k] ? 1 : 0)
                                        : (!d.path.empty() && ParentOf(d) == ParentOf(devs[k]));
      }
      const bool big = members >= need;
      if (big && big_seeded) continue;
      big_seeded = big_seeded || big;
      seeds.push_back(k);
    }
    long best_cost = std::numeric_limits<long>::max();
    for (size_t s : seeds) {
      long cost = 0;
      std::vector<size_t> set = Grow(devs, {}, &s, need, &cost);
      if (cost < best_cost) {
        best_cost = cost;
        picked = set;
      }
    }
  }

  // 4. Which IDs: per picked device, its naturally first IDs not yet given (repeats once).
  for (RefDevice& d : devs) {
    std::sort(d.ids.begin(), d.ids.end(), NaturalLess);
    d.ids.erase(std::unique(d.ids.begin(), d.ids.end()), d.ids.end());
  }
  std::vector<size_t> given(devs.size(), 0);
  for (size_t k : picked) {
    if (given[k] < devs[k].ids.size()) result.push_back(devs[k].ids[given[k]++]);
  }
  return result;
}

}  // namespace rdmak8s::dp::testing
