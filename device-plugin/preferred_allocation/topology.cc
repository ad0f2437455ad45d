// Preferred allocation, topology preparation: a pool's devices with their interned PCIe paths and
// the dense per-device arrays every request reads (PrepareDevices), built once per published state
// (PoolTopology); and the ID -> device look-up (DeviceOf).
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "device-plugin/preferred_allocation/device_name_index.h"
#include "device-plugin/preferred_allocation/preferred_allocation.h"

namespace rdmak8s::dp {
namespace {

// Heterogeneous look-up: a std::string key found by a string_view, no copy.
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

std::vector<std::vector<int>> InternPaths(const std::vector<IdLocality>& devices) {
  std::unordered_map<std::string_view, int> interned;
  std::vector<std::vector<int>> paths(devices.size());
  for (size_t d = 0; d < devices.size(); ++d) {
    paths[d].reserve(devices[d].pcie_path.size());
    for (const auto& e : devices[d].pcie_path) {
      paths[d].push_back(interned.emplace(e, static_cast<int>(interned.size())).first->second);
    }
  }
  return paths;
}

PreparedDevices PrepareDevices(const std::vector<IdLocality>& devices,
                               const std::vector<std::vector<int>>& paths) {
  PreparedDevices p;
  const size_t n = devices.size();
  p.nodes.push_back(-1);
  for (const auto& d : devices) p.nodes.push_back(d.numa_node);
  std::sort(p.nodes.begin(), p.nodes.end());
  p.nodes.erase(std::unique(p.nodes.begin(), p.nodes.end()), p.nodes.end());
  p.node_of.resize(n);
  for (size_t d = 0; d < n; ++d) {
    p.node_of[d] = static_cast<uint32_t>(
        std::lower_bound(p.nodes.begin(), p.nodes.end(), devices[d].numa_node) - p.nodes.begin());
  }
  // The order the algorithm breaks ties in: natural order of the names, then position.
  std::vector<uint32_t> by_name(n);
  for (size_t d = 0; d < n; ++d) by_name[d] = static_cast<uint32_t>(d);
  auto natural = [&](uint32_t x, uint32_t y) {
    const std::string& a = devices[x].rdma_dev;
    const std::string& b = devices[y].rdma_dev;
    return a != b ? NaturalLess(a, b) : x < y;
  };
  // PoolTopology's devices come in that order already: checked in one pass, sorted if not.
  if (!std::is_sorted(by_name.begin(), by_name.end(), natural)) {
    std::sort(by_name.begin(), by_name.end(), natural);
  }
  p.rank.resize(n);
  p.same_name.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const uint32_t d = by_name[r];
    p.rank[d] = static_cast<uint32_t>(r);
    // Equal names are next to each other in that order, the first at the lowest position.
    const bool same = r > 0 && devices[by_name[r - 1]].rdma_dev == devices[d].rdma_dev;
    p.same_name[d] = same ? p.same_name[by_name[r - 1]] : d;
  }
  std::map<std::vector<int>, int32_t> parents;
  p.parent.assign(n, -1);
  for (size_t d = 0; d < n && d < paths.size(); ++d) {
    if (paths[d].empty()) continue;
    std::vector<int> parent(paths[d].begin(), paths[d].end() - 1);
    p.parent[d] = parents.emplace(std::move(parent), static_cast<int32_t>(parents.size())).first->second;
  }
  p.parents = parents.size();
  p.path_start.push_back(0);
  for (size_t d = 0; d < n; ++d) {
    if (d < paths.size()) p.path_elems.insert(p.path_elems.end(), paths[d].begin(), paths[d].end());
    p.path_start.push_back(static_cast<uint32_t>(p.path_elems.size()));
  }
  return p;
}

AllocationTopology PoolTopology(const PoolState& state) {
  AllocationTopology topo;
  for (const auto& [name, t] : state.devices) {
    IdLocality l{name, t.dev.numa_node(), {}};
    if (t.dev.parent.pci) l.pcie_path = t.dev.parent.pci->pcie_path;
    topo.devices.push_back(std::move(l));
  }
  std::sort(topo.devices.begin(), topo.devices.end(),
            [](const IdLocality& a, const IdLocality& b) { return NaturalLess(a.rdma_dev, b.rdma_dev); });
  std::vector<std::string> names;
  for (const auto& l : topo.devices) names.push_back(l.rdma_dev);
  topo.paths = InternPaths(topo.devices);
  topo.prepared = PrepareDevices(topo.devices, topo.paths);
  auto index = std::make_shared<const DeviceNameIndex>(std::move(names));
  if (state.pool.mode == PoolMode::kShared) {
    topo.by_name = index;
  } else {
    // Exclusive IDs are few (one per device): a map of them, looked up by view.
    auto by_id = std::make_shared<std::unordered_map<std::string, int, ViewHash, std::equal_to<>>>();
    for (const auto& [id, dev] : state.id_to_dev) (*by_id)[id] = index->Find(dev);
    topo.device_of = [by_id](std::string_view id) {
      auto it = by_id->find(id);
      return it == by_id->end() ? -1 : it->second;
    };
  }
  return topo;
}

int DeviceOf(const AllocationTopology& topology, std::string_view id) {
  if (topology.by_name) return topology.by_name->DeviceOfSharedId(id);
  return topology.device_of ? topology.device_of(id) : -1;
}

}  // namespace rdmak8s::dp
