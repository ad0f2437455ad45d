#include "device-plugin/preferred_allocation.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace rdmak8s::dp {

namespace {
constexpr int kUnknownDistance = 64;  // no PCIe path: farther than anything on the tree
constexpr int kMaxSeeds = 64;
}  // namespace

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
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
                                             int size, const LocalityFn& locality) {
  std::vector<std::string> result;
  std::set<std::string> taken;
  for (const auto& id : must_include) {
    if (taken.insert(id).second) result.push_back(id);
  }
  if (size <= static_cast<int>(result.size())) return result;

  auto loc = [&](const std::string& id) {
    auto l = locality(id);
    return l ? *l : IdLocality{id, -1, {}};
  };
  std::vector<std::string> cand;
  for (const auto& id : available) {
    if (taken.insert(id).second) cand.push_back(id);
  }
  std::sort(cand.begin(), cand.end(), NaturalLess);
  std::map<std::string, IdLocality> locs;
  for (const auto& id : cand) locs[id] = loc(id);
  std::vector<IdLocality> chosen_locs;
  for (const auto& id : result) chosen_locs.push_back(loc(id));

  size_t need = static_cast<size_t>(size) - result.size();

  // Step 2: NUMA nodes.
  std::map<int, size_t> count;
  for (const auto& id : cand) count[locs[id].numa_node]++;
  std::set<int> used;
  for (const auto& l : chosen_locs) used.insert(l.numa_node);
  auto in_used = [&] {
    size_t n = 0;
    for (int node : used) n += count.count(node) ? count[node] : 0;
    return n;
  };
  while (in_used() < need) {
    size_t have = in_used();
    std::optional<int> best_fit, largest;
    // Keys: unknown NUMA last, then best fit (fewest IDs) / largest, then lower node number.
    auto fit_key = [&](int node) { return std::make_tuple(node < 0, count[node], node); };
    auto big_key = [&](int node) {
      return std::make_tuple(node < 0, -static_cast<long>(count[node]), node);
    };
    for (const auto& [node, n] : count) {
      if (used.count(node)) continue;
      if (have + n >= need && (!best_fit || fit_key(node) < fit_key(*best_fit))) best_fit = node;
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
  std::vector<std::string> allowed;
  for (const auto& id : cand) {
    if (used.count(locs[id].numa_node)) allowed.push_back(id);
  }

  // Step 3: greedy PCIe closeness from the chosen set.
  auto grow = [&](std::vector<IdLocality> base, std::vector<std::string> picked,
                  std::set<std::string> picked_set, int* cost) {
    std::set<std::string> used_devs;
    for (const auto& l : base) used_devs.insert(l.rdma_dev);
    while (picked.size() < need) {
      const std::string* best = nullptr;
      std::tuple<int, long, size_t> best_key{};
      for (size_t i = 0; i < allowed.size(); ++i) {
        const std::string& id = allowed[i];
        if (picked_set.count(id)) continue;
        const IdLocality& l = locs[id];
        long dist = 0;
        for (const auto& b : base) dist += PcieDistance(l, b);
        std::tuple<int, long, size_t> key{used_devs.count(l.rdma_dev) ? 1 : 0, dist, i};
        if (best == nullptr || key < best_key) {
          best = &id;
          best_key = key;
        }
      }
      if (best == nullptr) break;
      *cost += static_cast<int>(std::get<1>(best_key));
      base.push_back(locs[*best]);
      used_devs.insert(locs[*best].rdma_dev);
      picked_set.insert(*best);
      picked.push_back(*best);
    }
    return picked;
  };

  std::vector<std::string> picked;
  if (!chosen_locs.empty()) {
    int cost = 0;
    picked = grow(chosen_locs, {}, {}, &cost);
  } else {
    // Try each device's first ID as seed; keep the cheapest set (first one on ties).
    std::set<std::string> seeded;
    int best_cost = std::numeric_limits<int>::max();
    for (const auto& id : allowed) {
      if (static_cast<int>(seeded.size()) >= kMaxSeeds) break;
      if (!seeded.insert(locs[id].rdma_dev).second) continue;
      int cost = 0;
      auto set = grow({locs[id]}, {id}, {id}, &cost);
      if (cost < best_cost) {
        best_cost = cost;
        picked = std::move(set);
      }
    }
  }
  result.insert(result.end(), picked.begin(), picked.end());
  return result;
}

}  // namespace rdmak8s::dp
