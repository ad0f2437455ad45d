#include "device-plugin/preferred_allocation.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <memory>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace rdmak8s::dp {

namespace {

constexpr int kUnknownDistance = 64;  // no PCIe path: farther than anything on the tree
constexpr size_t kMaxSeeds = 16;

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// A device as the algorithm sees it: its PCIe path as small integers (equal strings, equal
// numbers), so that a distance is a few integer compares.
struct Dev {
  const IdLocality* loc = nullptr;
  std::vector<int> path;
  size_t count = 0;  // available IDs on it
};

int Distance(const Dev& a, const Dev& b) {
  if (a.loc == b.loc || a.loc->rdma_dev == b.loc->rdma_dev) return 0;
  if (a.path.empty() || b.path.empty()) return kUnknownDistance;
  size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common]) {
    ++common;
  }
  return static_cast<int>(a.path.size() - common + b.path.size() - common);
}

// Device names -> index, open addressing with FNV-1a: a look-up hashes the few bytes of the
// name and compares once, several times cheaper than std::unordered_map on 100,000 IDs.
class NameIndex {
 public:
  explicit NameIndex(std::vector<std::string> names) : names_(std::move(names)) {
    size_t cap = 16;
    while (cap < names_.size() * 4) cap <<= 1;
    slots_.assign(cap, -1);
    for (size_t i = 0; i < names_.size(); ++i) {
      size_t h = Hash(names_[i]) & (cap - 1);
      while (slots_[h] >= 0) h = (h + 1) & (cap - 1);
      slots_[h] = static_cast<int>(i);
    }
  }
  int Find(std::string_view name) const {
    size_t mask = slots_.size() - 1;
    for (size_t h = Hash(name) & mask; slots_[h] >= 0; h = (h + 1) & mask) {
      if (names_[static_cast<size_t>(slots_[h])] == name) return slots_[h];
    }
    return -1;
  }

 private:
  static size_t Hash(std::string_view s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
  std::vector<std::string> names_;
  std::vector<int> slots_;
};

}  // namespace

AllocationTopology PoolTopology(const PoolState& state) {
  AllocationTopology topo;
  std::vector<std::string> names;
  for (const auto& [name, t] : state.devices) {
    IdLocality l{name, t.dev.numa_node(), {}};
    if (t.dev.parent.pci) l.pcie_path = t.dev.parent.pci->pcie_path;
    topo.devices.push_back(std::move(l));
    names.push_back(name);
  }
  auto index = std::make_shared<const NameIndex>(std::move(names));
  if (state.pool.mode == PoolMode::kShared) {
    topo.device_of = [index](std::string_view id) {
      size_t dash = id.rfind('-');
      return dash == std::string_view::npos ? -1 : index->Find(id.substr(0, dash));
    };
  } else {
    auto by_id = std::make_shared<std::unordered_map<std::string, int>>();
    for (const auto& [id, dev] : state.id_to_dev) (*by_id)[id] = index->Find(dev);
    topo.device_of = [by_id](std::string_view id) {
      auto it = by_id->find(std::string(id));
      return it == by_id->end() ? -1 : it->second;
    };
  }
  return topo;
}

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (IsDigit(a[i]) && IsDigit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && IsDigit(a[ie])) ++ie;
      while (je < b.size() && IsDigit(b[je])) ++je;
      size_t is = i, js = j;  // skip leading zeros
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      int c = a.substr(is, ie - is).compare(b.substr(js, je - js));
      if (c != 0) return c < 0;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

int PcieDistance(const IdLocality& a, const IdLocality& b) {
  if (a.rdma_dev == b.rdma_dev) return 0;
  if (a.pcie_path.empty() || b.pcie_path.empty()) return kUnknownDistance;
  size_t common = 0;
  while (common < a.pcie_path.size() && common < b.pcie_path.size() &&
         a.pcie_path[common] == b.pcie_path[common]) {
    ++common;
  }
  return static_cast<int>(a.pcie_path.size() - common + b.pcie_path.size() - common);
}

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const AllocationTopology& topology) {
  std::vector<std::string> result;
  std::unordered_set<std::string_view> must;
  for (const auto& id : must_include) {
    if (must.insert(id).second) result.push_back(id);
  }
  if (size <= static_cast<int>(result.size())) return result;
  const size_t need = static_cast<size_t>(size) - result.size();

  // Step 0, the one pass over the IDs: each available ID's device. Devices [0, n) are the
  // topology's; an ID of no known device becomes a device of its own after them.
  const size_t n = topology.devices.size();
  std::vector<IdLocality> unknown;
  std::vector<int> dev_of(available.size(), -1);
  std::vector<size_t> count(n, 0);
  auto dev_of_id = [&](std::string_view id) { return topology.device_of ? topology.device_of(id) : -1; };
  for (size_t i = 0; i < available.size(); ++i) {
    const std::string& id = available[i];
    if (!must.empty() && must.count(id)) continue;
    int d = dev_of_id(id);
    if (d < 0 || static_cast<size_t>(d) >= n) {
      unknown.push_back(IdLocality{id, -1, {}});
      d = static_cast<int>(n + unknown.size() - 1);
      count.push_back(0);
    }
    dev_of[i] = d;
    count[static_cast<size_t>(d)]++;
  }
  auto loc_of = [&](size_t d) -> const IdLocality& {
    return d < n ? topology.devices[d] : unknown[d - n];
  };
  // Devices of the must-include IDs (their locality counts, whether or not they are available).
  std::vector<const IdLocality*> must_locs;
  std::vector<IdLocality> must_unknown;
  must_unknown.reserve(result.size());
  for (const auto& id : result) {
    int d = dev_of_id(id);
    if (d >= 0 && static_cast<size_t>(d) < n) {
      must_locs.push_back(&topology.devices[static_cast<size_t>(d)]);
    } else {
      must_unknown.push_back(IdLocality{id, -1, {}});
      must_locs.push_back(&must_unknown.back());
    }
  }

  // Step 2: NUMA nodes.
  std::map<int, size_t> per_node;
  for (size_t d = 0; d < count.size(); ++d) {
    if (count[d] > 0) per_node[loc_of(d).numa_node] += count[d];
  }
  std::set<int> used;
  for (const auto* l : must_locs) used.insert(l->numa_node);
  auto in_used = [&] {
    size_t total = 0;
    for (int node : used) {
      auto it = per_node.find(node);
      if (it != per_node.end()) total += it->second;
    }
    return total;
  };
  while (in_used() < need) {
    size_t have = in_used();
    std::optional<int> best_fit, largest;
    auto fit_key = [&](int node) { return std::make_tuple(node < 0, per_node[node], node); };
    auto big_key = [&](int node) {
      return std::make_tuple(node < 0, -static_cast<long>(per_node[node]), node);
    };
    for (const auto& [node, c] : per_node) {
      if (used.count(node)) continue;
      if (have + c >= need && (!best_fit || fit_key(node) < fit_key(*best_fit))) best_fit = node;
      if (!largest || big_key(node) < big_key(*largest)) largest = node;
    }
    if (best_fit) {
      used.insert(*best_fit);
    } else if (largest) {
      used.insert(*largest);
    } else {
      break;  // not enough IDs at all: return what there is
    }
  }

  // The devices that may give IDs, in natural order of their names, with interned PCIe paths.
  std::vector<size_t> order;
  for (size_t d = 0; d < count.size(); ++d) {
    if (count[d] > 0 && used.count(loc_of(d).numa_node)) order.push_back(d);
  }
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const std::string& a = loc_of(x).rdma_dev;
    const std::string& b = loc_of(y).rdma_dev;
    if (a != b) return NaturalLess(a, b);
    return x < y;
  });
  std::unordered_map<std::string, int> interned;
  auto intern = [&](const IdLocality& l) {
    std::vector<int> path;
    path.reserve(l.pcie_path.size());
    for (const auto& e : l.pcie_path) {
      path.push_back(interned.emplace(e, static_cast<int>(interned.size())).first->second);
    }
    return path;
  };
  std::vector<Dev> devs(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    devs[k].loc = &loc_of(order[k]);
    devs[k].path = intern(*devs[k].loc);
    devs[k].count = count[order[k]];
  }
  std::vector<Dev> base;
  for (const auto* l : must_locs) base.push_back(Dev{l, intern(*l), 0});

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
        if (devs[k].loc->rdma_dev == b.loc->rdma_dev) dev_used[k] = 1;
      }
    }
    auto take = [&](size_t k) {
      *cost += dist[k];
      picked.push_back(k);
      taken[k]++;
      dev_used[k] = 1;
      for (size_t j = 0; j < devs.size(); ++j) dist[j] += Distance(devs[j], devs[k]);
    };
    if (seed) take(*seed);
    while (picked.size() < need) {
      std::optional<size_t> best;
      for (size_t k = 0; k < devs.size(); ++k) {
        if (taken[k] >= devs[k].count) continue;
        if (!best || std::make_tuple(dev_used[k], dist[k]) < std::make_tuple(dev_used[*best], dist[*best])) {
          best = k;
        }
      }
      if (!best) break;
      take(*best);
    }
    return picked;
  };

  std::vector<size_t> picked;
  if (!base.empty()) {
    long cost = 0;
    picked = grow(base, std::nullopt, &cost);
  } else if (!devs.empty()) {
    // Seeds: the first device under each parent bridge; of the parents with enough devices for
    // the whole request, only the first.
    std::map<std::vector<int>, std::pair<size_t, size_t>> parents;  // parent -> (first, devices)
    std::vector<std::vector<int>> parent_order;
    for (size_t k = 0; k < devs.size(); ++k) {
      std::vector<int> parent = devs[k].path;
      if (!parent.empty()) parent.pop_back();
      if (devs[k].path.empty()) parent = {-1 - static_cast<int>(k)};  // no tree: its own
      auto [it, fresh] = parents.emplace(parent, std::make_pair(k, 0));
      it->second.second++;
      if (fresh) parent_order.push_back(parent);
    }
    std::vector<size_t> seeds;
    bool big_seeded = false;
    for (const auto& p : parent_order) {
      auto [first, members] = parents[p];
      bool big = members >= need;
      if (big && big_seeded) continue;
      big_seeded |= big;
      seeds.push_back(first);
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
  std::vector<char> wanted(count.size(), 0);  // by device index
  for (size_t k : picked) wanted[order[k]] = 1;
  std::unordered_map<size_t, std::vector<std::string_view>> ids;
  for (size_t i = 0; i < available.size(); ++i) {
    int d = dev_of[i];
    if (d >= 0 && wanted[static_cast<size_t>(d)]) ids[static_cast<size_t>(d)].push_back(available[i]);
  }
  for (auto& [d, v] : ids) {
    std::sort(v.begin(), v.end(), NaturalLess);
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  std::unordered_map<size_t, size_t> next;
  for (size_t k : picked) {
    size_t d = order[k];
    size_t& at = next[d];
    auto& v = ids[d];
    if (at < v.size()) result.emplace_back(v[at++]);
  }
  return result;
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
