#include "device-plugin/preferred_allocation.h"

#include "device-plugin/device_name_index.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <map>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rdmak8s::dp {

namespace {

constexpr int kUnknownDistance = 64;  // no PCIe path: farther than anything on the tree
constexpr size_t kMaxSeeds = 16;

// std::isdigit without the call: the decimal digits are '0'..'9' in every locale (C11 7.4.1.5).
bool IsDigit(char c) { return static_cast<unsigned>(static_cast<unsigned char>(c)) - '0' < 10u; }

// A device as the algorithm sees it: its PCIe path as small integers (equal strings, equal
// numbers), so that a distance is a few integer compares.
struct Dev {
  const IdLocality* loc = nullptr;
  size_t count = 0;  // available IDs on it
  int32_t same_name = -1;  // PreparedDevices::same_name; -1 for no device of the topology
  int32_t parent = -1;     // PreparedDevices::parent; -1 for none (no PCIe path)
  // The interned PCIe path, and its first and last elements (what most distances need).
  const int* path = nullptr;
  uint32_t path_len = 0;
  int root = -1, last = -1;

  Dev() = default;
  Dev(const IdLocality* l, size_t ids, int32_t same, int32_t par, const int* p, uint32_t len)
      : loc(l), count(ids), same_name(same), parent(par), path(p), path_len(len),
        root(len > 0 ? p[0] : -1), last(len > 0 ? p[len - 1] : -1) {}
};

// Hops between two functions of the PCIe tree, from their root-port-to-function paths (as
// strings, or interned as integers): up to the deepest common ancestor and down again.
template <typename Elem>
int TreeHops(const std::vector<Elem>& a, const std::vector<Elem>& b) {
  if (a.empty() || b.empty()) return kUnknownDistance;
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  return static_cast<int>(a.size() - common + b.size() - common);
}

// Heterogeneous look-up: a std::string key found by a string_view, no copy.
struct ViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Per available ID, its device: 0..n-1 the topology's, n none known, kMust a must-include ID.
// Kept as 16-bit numbers when they fit (half the memory the last pass reads, 8 compared per
// SSE2 instruction there), else 32-bit.
class DevOf {
 public:
  template <typename D>
  static constexpr D kMust = std::numeric_limits<D>::max();

  DevOf(size_t ids, size_t devices) {
    if (devices < kMust<uint16_t>) {
      narrow_ = std::make_unique_for_overwrite<uint16_t[]>(ids);  // every element is written
    } else {
      wide_ = std::make_unique_for_overwrite<uint32_t[]>(ids);
    }
  }
  // f(D* dev_of), D the type in use.
  template <typename F>
  void Visit(F&& f) {
    if (narrow_) {
      f(narrow_.get());
    } else {
      f(wide_.get());
    }
  }

 private:
  std::unique_ptr<uint16_t[]> narrow_;
  std::unique_ptr<uint32_t[]> wide_;
};

// f(i) for each i < total with dev[i] among `wanted` (devices under `devices`), in order.
// The last pass over the IDs: most requests want a few devices of many, so the device numbers
// are compared a vector at a time (GCC vector extensions: SSE2 on x86-64, plain code elsewhere)
// and only vectors holding one are looked at closer. The picked devices are usually neighbours
// (siblings under one bridge, in natural order): when they lie within 64 numbers, a vector is
// tested against that range (two operations) and a hit against a bit mask; else up to 8 are
// compared one by one, more than 8 take a table per device.
template <typename D, typename F>
void ForEachOnDevices(const D* dev, size_t total, size_t devices, const std::vector<uint32_t>& wanted,
                      F&& f) {
  if (wanted.empty()) return;
  constexpr size_t kLanes = 16 / sizeof(D);
  typedef D V __attribute__((vector_size(16)));
  auto any = [](const auto& m) {
#if defined(__SSE2__)
    __m128i x;
    std::memcpy(&x, &m, sizeof(x));
    return _mm_movemask_epi8(x) != 0;
#else
    uint64_t half[2];
    std::memcpy(half, &m, sizeof(half));
    return (half[0] | half[1]) != 0;
#endif
  };
  size_t i = 0;
  const auto [lo_it, hi_it] = std::minmax_element(wanted.begin(), wanted.end());
  const uint32_t lo = *lo_it, span = *hi_it - lo + 1;
  if (span <= 64) {
    uint64_t bits = 0;
    for (uint32_t d : wanted) bits |= uint64_t{1} << (d - lo);
    auto is_wanted = [&](D d) {
      const uint32_t off = static_cast<uint32_t>(d) - lo;  // wraps below lo
      return off < span && ((bits >> off) & 1) != 0;
    };
    V lo_v, last_v;
    for (size_t j = 0; j < kLanes; ++j) {
      lo_v[j] = static_cast<D>(lo);
      last_v[j] = static_cast<D>(span - 1);
    }
    // Four vectors (32 16-bit numbers) a step, one branch for them; a step with numbers in the
    // range walks them by bit (SSE2: one bit per byte, the lowest of each number's kept).
    for (; i + 4 * kLanes <= total; i += 4 * kLanes) {
      V v0, v1, v2, v3;
      std::memcpy(&v0, dev + i, sizeof(V));
      std::memcpy(&v1, dev + i + kLanes, sizeof(V));
      std::memcpy(&v2, dev + i + 2 * kLanes, sizeof(V));
      std::memcpy(&v3, dev + i + 3 * kLanes, sizeof(V));
      const auto m0 = (v0 - lo_v) <= last_v;
      const auto m1 = (v1 - lo_v) <= last_v;
      const auto m2 = (v2 - lo_v) <= last_v;
      const auto m3 = (v3 - lo_v) <= last_v;
      if (!any(m0 | m1 | m2 | m3)) [[likely]] continue;
#if defined(__SSE2__)
      auto byte_bits = [](const auto& m) {
        __m128i x;
        std::memcpy(&x, &m, sizeof(x));
        return static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(x)));
      };
      constexpr uint64_t kLaneBits = sizeof(D) == 2 ? 0x5555555555555555ull : 0x1111111111111111ull;
      uint64_t b = (byte_bits(m0) | byte_bits(m1) << 16 | byte_bits(m2) << 32 | byte_bits(m3) << 48) &
                   kLaneBits;
      for (; b != 0; b &= b - 1) {
        const size_t j = i + static_cast<size_t>(__builtin_ctzll(b)) / sizeof(D);
        if (is_wanted(dev[j])) f(j);
      }
#else
      for (size_t j = i; j < i + 4 * kLanes; ++j) {
        if (is_wanted(dev[j])) f(j);
      }
#endif
    }
    for (; i < total; ++i) {
      if (is_wanted(dev[i])) f(i);
    }
    return;
  }
  if (wanted.size() <= 8) {
    V w[8];
    for (size_t k = 0; k < 8; ++k) {  // padded with the last: no device is added
      const D d = static_cast<D>(wanted[std::min(k, wanted.size() - 1)]);
      for (size_t j = 0; j < kLanes; ++j) w[k][j] = d;
    }
    auto is_wanted = [&](D d) { return std::find(wanted.begin(), wanted.end(), d) != wanted.end(); };
    for (; i + kLanes <= total; i += kLanes) {
      V v;
      std::memcpy(&v, dev + i, sizeof(v));
      const auto m = (v == w[0]) | (v == w[1]) | (v == w[2]) | (v == w[3]) | (v == w[4]) |
                     (v == w[5]) | (v == w[6]) | (v == w[7]);
      if (!any(m)) [[likely]] continue;
      for (size_t j = 0; j < kLanes; ++j) {
        if (m[j] != 0) f(i + j);
      }
    }
    for (; i < total; ++i) {
      if (is_wanted(dev[i])) f(i);
    }
    return;
  }
  std::vector<char> is_wanted(devices, 0);
  for (uint32_t d : wanted) is_wanted[d] = 1;
  for (; i < total; ++i) {
    if (dev[i] < devices && is_wanted[dev[i]]) f(i);
  }
}

// count[d] += how many of dev[0, total) are d, for d < count->size(). A pass of its own over the
// 16-bit numbers the pass over the IDs wrote: counting inside that pass, each increment's
// address known only at the end of the ID's look-up, cost it a quarter of its time here (1,024
// devices x 100 IDs: ~90 us of ~350), counting afterwards ~30 us. Four tables of counts, so
// that neighbouring equal numbers do not wait on one another's increment.
template <typename D>
void CountDevices(const D* dev, size_t total, std::vector<size_t>* count) {
  const size_t n = count->size();
  std::vector<uint32_t> c(4 * n, 0);  // IDs of one request fit in 32 bits
  uint32_t* const c0 = c.data();
  uint32_t* const c1 = c0 + n;
  uint32_t* const c2 = c1 + n;
  uint32_t* const c3 = c2 + n;
  size_t i = 0;
  for (; i + 4 <= total; i += 4) {
    c0[dev[i]]++;
    c1[dev[i + 1]]++;
    c2[dev[i + 2]]++;
    c3[dev[i + 3]]++;
  }
  for (; i < total; ++i) c0[dev[i]]++;
  for (size_t d = 0; d < n; ++d) (*count)[d] += size_t{c0[d]} + c1[d] + c2[d] + c3[d];
}

// Two devices of one name are one device. Devices of the topology compare their first
// device of that name; others (IDs of no known device, must-include ones among them) names.
bool SameDevice(const Dev& a, const Dev& b) {
  if (a.same_name >= 0 && b.same_name >= 0) return a.same_name == b.same_name;
  return a.loc == b.loc || a.loc->rdma_dev == b.loc->rdma_dev;
}

// TreeHops on interned paths. Step 3 asks it for every device per pick, so the usual answers
// come from fields of Dev alone: different root ports (no common ancestor), or one parent bridge
// (siblings, or one function).
int Distance(const Dev& a, const Dev& b) {
  if (SameDevice(a, b)) return 0;
  if (a.path_len == 0 || b.path_len == 0) return kUnknownDistance;
  if (a.root != b.root) return static_cast<int>(a.path_len + b.path_len);
  if (a.parent >= 0 && a.parent == b.parent) return a.last == b.last ? 0 : 2;
  uint32_t common = 1;  // the roots
  while (common < a.path_len && common < b.path_len && a.path[common] == b.path[common]) ++common;
  return static_cast<int>(a.path_len - common + b.path_len - common);
}

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

bool NaturalLess(std::string_view a, std::string_view b) {
  // The common prefix compares equal token by token: start after it, at the beginning of the
  // digit run (if any) it ends in. IDs of one device share their whole name.
  // A word at a time (the minimum of a device's IDs compares 100 of them that share 7 or more
  // bytes): on a little-endian machine the first byte that differs is the lowest set one.
  const size_t limit = std::min(a.size(), b.size());
  size_t m = 0;
  if constexpr (std::endian::native == std::endian::little) {
    for (; m + 8 <= limit; m += 8) {
      uint64_t x, y;
      std::memcpy(&x, a.data() + m, 8);
      std::memcpy(&y, b.data() + m, 8);
      if (x != y) {
        m += static_cast<size_t>(__builtin_ctzll(x ^ y)) / 8;
        break;
      }
    }
  }
  while (m < limit && a[m] == b[m]) ++m;
  while (m > 0 && IsDigit(a[m - 1])) --m;
  size_t i = m, j = m;
  while (i < a.size() && j < b.size()) {
    if (IsDigit(a[i]) && IsDigit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && IsDigit(a[ie])) ++ie;
      while (je < b.size() && IsDigit(b[je])) ++je;
      size_t is = i, js = j;  // skip leading zeros
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      for (; is < ie; ++is, ++js) {  // runs of one length: the first digit that differs
        if (a[is] != b[js]) return a[is] < b[js];
      }
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
  return TreeHops(a.pcie_path, b.pcie_path);
}

int DeviceOf(const AllocationTopology& topology, std::string_view id) {
  if (topology.by_name) return topology.by_name->DeviceOfSharedId(id);
  return topology.device_of ? topology.device_of(id) : -1;
}

namespace {

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
