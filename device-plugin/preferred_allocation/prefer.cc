// Preferred allocation, the algorithm's steps (device-plugin/preferred_allocation/preferred_allocation.h): must-include
// IDs, the pass over the IDs, NUMA nodes, PCIe closeness (pcie_closeness.h), and which IDs of the
// picked devices; and the public PreferredAllocation overloads.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "device-plugin/preferred_allocation/count.h"
#include "device-plugin/preferred_allocation/device_name_index.h"
#include "device-plugin/preferred_allocation/distance.h"
#include "device-plugin/preferred_allocation/pcie_closeness.h"
#include "device-plugin/preferred_allocation/preferred_allocation.h"
#include "device-plugin/preferred_allocation/scan.h"

namespace rdmak8s::dp {
namespace {

using preferred_allocation::CountDevices;
using preferred_allocation::Dev;
using preferred_allocation::DevOf;
using preferred_allocation::ForEachOnDevices;
using preferred_allocation::PickDevices;


// Step 1: every must-include ID, in the order given, duplicates dropped; `must` views them.
std::vector<std::string> MustIncludeFirst(const std::vector<std::string>& must_include,
                                          std::unordered_set<std::string_view>* must) {
  std::vector<std::string> result;
  for (const auto& id : must_include) {
    if (must->insert(id).second) result.push_back(id);
  }
  return result;
}

// The device number of an ID of no known device, or of a device number out of range: n.
uint32_t DeviceOrNone(int d, size_t n) {
  return static_cast<uint32_t>(d < 0 || static_cast<size_t>(d) >= n ? n : static_cast<size_t>(d));
}

// Step 0, the one pass over the IDs: each available ID's device, and how many each device has.
// Devices [0, n) are the topology's; an ID of no known device gets n (`count` has n + 1 entries).
// On a big pool this pass is the request's cost: a shared pool's is DeviceNameIndex's own loop.
template <typename Id>
DevOf ScanIds(const std::vector<Id>& available, const AllocationTopology& topology,
              std::vector<size_t>* count) {
  const size_t n = topology.devices.size();
  DevOf dev_of(available.size(), n);
  count->assign(n + 1, 0);
  dev_of.Visit([&](auto* out) {
    using D = std::remove_pointer_t<decltype(out)>;
    if (topology.by_name) {
      topology.by_name->DevicesOfSharedIds(available.data(), available.size(), static_cast<D>(n), out);
    } else {
      for (size_t i = 0; i < available.size(); ++i) {
        const int d = topology.device_of ? topology.device_of(available[i]) : -1;
        out[i] = static_cast<D>(DeviceOrNone(d, n));
      }
    }
    CountDevices(out, available.size(), count);
  });
  return dev_of;
}

// The must-include IDs' devices (their locality counts, whether or not they are available), per
// ID of `result`, n for none known. An available ID that is a must-include one is on the same
// device: only the IDs of those devices are compared with them; they leave the count of their
// device and are marked DevOf::kMust.
template <typename Id>
std::vector<uint32_t> SetAsideMustInclude(const std::vector<Id>& available,
                                          const std::vector<std::string>& result,
                                          const std::unordered_set<std::string_view>& must,
                                          const AllocationTopology& topology, DevOf& dev_of,
                                          std::vector<size_t>& count) {
  const size_t n = topology.devices.size();
  std::vector<uint32_t> must_dev;
  must_dev.reserve(result.size());
  for (const auto& id : result) must_dev.push_back(DeviceOrNone(DeviceOf(topology, id), n));
  if (must.empty()) return must_dev;
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
  return must_dev;
}

// Each ID of no known device becomes a device of its own, in the order given: device n + u is
// the ID at `at[u]` (dev_of keeps n for it), with one ID. `count` loses its entry n and gains one
// per such device.
struct UnknownDevices {
  std::vector<IdLocality> devices;
  std::vector<size_t> at;
};
template <typename Id>
UnknownDevices SplitUnknownIds(const std::vector<Id>& available, size_t n, DevOf& dev_of,
                               std::vector<size_t>& count) {
  UnknownDevices unknown;
  const size_t unknown_ids = count[n];
  count.pop_back();
  if (unknown_ids == 0) return unknown;
  unknown.devices.reserve(unknown_ids);
  dev_of.Visit([&](const auto* dev) {
    for (size_t i = 0; i < available.size(); ++i) {
      if (dev[i] != n) continue;
      unknown.devices.push_back(IdLocality{std::string(available[i]), -1, {}});
      unknown.at.push_back(i);
      count.push_back(1);
    }
  });
  return unknown;
}

// The prepared devices: the topology's own (PoolTopology builds them once per state), else
// derived into `own` (a topology assembled by hand, as tests do).
const PreparedDevices& PreparedOf(const AllocationTopology& topology, PreparedDevices* own) {
  const size_t n = topology.devices.size();
  if (!topology.prepared.nodes.empty() && topology.prepared.node_of.size() == n) {
    return topology.prepared;
  }
  if (topology.paths.size() == n) {
    *own = PrepareDevices(topology.devices, topology.paths);
  } else {
    *own = PrepareDevices(topology.devices, InternPaths(topology.devices));
  }
  return *own;
}

// The devices as the later steps see them: the topology's [0, n), then the unknown ones.
struct DeviceTable {
  const AllocationTopology& topology;
  const UnknownDevices& unknown;
  const PreparedDevices& prep;
  size_t n;
  uint32_t unknown_node;  // the place of NUMA node -1 in prep.nodes

  DeviceTable(const AllocationTopology& t, const UnknownDevices& u, const PreparedDevices& p)
      : topology(t), unknown(u), prep(p), n(t.devices.size()),
        unknown_node(static_cast<uint32_t>(std::lower_bound(p.nodes.begin(), p.nodes.end(), -1) -
                                           p.nodes.begin())) {}

  const IdLocality& Locality(size_t d) const {
    return d < n ? topology.devices[d] : unknown.devices[d - n];
  }
  // NUMA node as its place in prep.nodes (ascending, so the lower node number is the lower
  // place; -1, unknown, among them).
  uint32_t NodeOf(size_t d) const { return d < n ? prep.node_of[d] : unknown_node; }
  Dev At(size_t d, size_t ids) const {
    if (d >= n) return Dev(&unknown.devices[d - n], ids, -1, -1, nullptr, 0);
    return Dev(&topology.devices[d], ids, static_cast<int32_t>(prep.same_name[d]), prep.parent[d],
               prep.path_elems.data() + prep.path_start[d], prep.path_start[d + 1] - prep.path_start[d]);
  }
};

// Step 2: the NUMA nodes (places in prep.nodes) the rest come from. Nodes of must-include IDs are
// free; then, while they hold fewer than `need`, the smallest node that holds the rest (best
// fit), else the node with most IDs. Ties: the lower node; unknown NUMA (-1) last.
std::vector<char> PickNumaNodes(const DeviceTable& table, const std::vector<size_t>& count,
                                const std::vector<uint32_t>& must_dev, size_t need) {
  const PreparedDevices& prep = table.prep;
  std::vector<size_t> per_node(prep.nodes.size(), 0);
  for (size_t d = 0; d < count.size(); ++d) per_node[table.NodeOf(d)] += count[d];
  std::vector<char> used(prep.nodes.size(), 0);
  for (uint32_t d : must_dev) used[table.NodeOf(d)] = 1;
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
  return used;
}

// The devices that may give IDs (some available, on a used node), in natural order of their
// names (ties: by number).
std::vector<size_t> CandidateOrder(const DeviceTable& table, const std::vector<size_t>& count,
                                   const std::vector<char>& used) {
  const size_t n = table.n;
  std::vector<size_t> order;
  for (size_t d = 0; d < count.size(); ++d) {
    if (count[d] > 0 && used[table.NodeOf(d)]) order.push_back(d);
  }
  auto natural = [&](size_t x, size_t y) {
    if (x < n && y < n) return table.prep.rank[x] < table.prep.rank[y];
    const std::string& a = table.Locality(x).rdma_dev;
    const std::string& b = table.Locality(y).rdma_dev;
    if (a != b) return NaturalLess(a, b);
    return x < y;
  };
  // The topology's devices come in rank order when PoolTopology built it: checked in one pass.
  if (!std::is_sorted(order.begin(), order.end(), natural)) std::sort(order.begin(), order.end(), natural);
  return order;
}

// Step 4, which IDs: per picked device, its naturally first available IDs, appended to `result`
// in the order of the picks. One more pass over the IDs, touching only those of picked devices.
template <typename Id>
void CollectIds(const std::vector<Id>& available, const std::vector<size_t>& picked,
                const std::vector<size_t>& order, const std::vector<size_t>& count,
                const UnknownDevices& unknown, size_t n, DevOf& dev_of,
                std::vector<std::string>& result) {
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
  for (size_t u = 0; u < unknown.at.size(); ++u) {
    const int32_t l = list_of[n + u];
    if (l >= 0) lists[static_cast<size_t>(l)].emplace_back(available[unknown.at[u]]);
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
    // one per comparison.
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
}

// The algorithm (preferred_allocation.h), step by step, on IDs held as std::string (tests, the
// LocalityFn overload) or as views into a request (the gRPC server: no copy of 100,000 strings).
template <typename Id>
std::vector<std::string> Prefer(const std::vector<Id>& available,
                                const std::vector<std::string>& must_include, int size,
                                const AllocationTopology& topology) {
  std::unordered_set<std::string_view> must;
  std::vector<std::string> result = MustIncludeFirst(must_include, &must);
  if (size <= static_cast<int>(result.size())) return result;
  const size_t need = static_cast<size_t>(size) - result.size();
  const size_t n = topology.devices.size();

  std::vector<size_t> count;
  DevOf dev_of = ScanIds(available, topology, &count);
  const std::vector<uint32_t> must_dev =
      SetAsideMustInclude(available, result, must, topology, dev_of, count);
  const UnknownDevices unknown = SplitUnknownIds(available, n, dev_of, count);
  PreparedDevices own_prepared;
  const DeviceTable table(topology, unknown, PreparedOf(topology, &own_prepared));

  // The must-include IDs' devices (IDs of no known device: devices of their own).
  std::vector<IdLocality> must_unknown;
  must_unknown.reserve(result.size());  // no reallocation: `base` points into it
  std::vector<Dev> base;
  for (size_t k = 0; k < result.size(); ++k) {
    if (must_dev[k] < n) {
      base.push_back(table.At(must_dev[k], 0));
    } else {
      must_unknown.push_back(IdLocality{result[k], -1, {}});
      base.push_back(Dev(&must_unknown.back(), 0, -1, -1, nullptr, 0));
    }
  }

  const std::vector<char> used = PickNumaNodes(table, count, must_dev, need);
  const std::vector<size_t> order = CandidateOrder(table, count, used);
  std::vector<Dev> devs(order.size());
  for (size_t k = 0; k < order.size(); ++k) devs[k] = table.At(order[k], count[order[k]]);
  const std::vector<size_t> picked = PickDevices(devs, base, table.prep.parents, need);
  CollectIds(available, picked, order, count, unknown, n, dev_of, result);
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

