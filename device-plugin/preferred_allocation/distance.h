// Preferred allocation, PCIe distance: a device as the steps after the scan see it (Dev: its
// interned path and prepared fields) and the hops between two of them in the PCIe tree.
// Internal to preferred allocation (device-plugin/preferred_allocation/preferred_allocation.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "device-plugin/preferred_allocation/preferred_allocation.h"

namespace rdmak8s::dp::preferred_allocation {

constexpr int kUnknownDistance = 64;  // no PCIe path: farther than anything on the tree

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

// Two devices of one name are one device. Devices of the topology compare their first
// device of that name; others (IDs of no known device, must-include ones among them) names.
inline bool SameDevice(const Dev& a, const Dev& b) {
  if (a.same_name >= 0 && b.same_name >= 0) return a.same_name == b.same_name;
  return a.loc == b.loc || a.loc->rdma_dev == b.loc->rdma_dev;
}

// TreeHops on interned paths. Step 3 asks it for every device per pick, so the usual answers
// come from fields of Dev alone: different root ports (no common ancestor), or one parent bridge
// (siblings, or one function).
inline int Distance(const Dev& a, const Dev& b) {
  if (SameDevice(a, b)) return 0;
  if (a.path_len == 0 || b.path_len == 0) return kUnknownDistance;
  if (a.root != b.root) return static_cast<int>(a.path_len + b.path_len);
  if (a.parent >= 0 && a.parent == b.parent) return a.last == b.last ? 0 : 2;
  uint32_t common = 1;  // the roots
  while (common < a.path_len && common < b.path_len && a.path[common] == b.path[common]) ++common;
  return static_cast<int>(a.path_len - common + b.path_len - common);
}

}  // namespace rdmak8s::dp::preferred_allocation
