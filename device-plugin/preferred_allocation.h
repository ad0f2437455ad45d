// GetPreferredAllocation: which `size` IDs kubelet should take from `available`.
//
// Algorithm (deterministic; docs/device-plugin.md#preferred-allocation):
//  1. Every must-include ID is in the answer (in the order given, duplicates dropped).
//  2. NUMA: the rest come from as few NUMA nodes as possible. Nodes already used by must-include
//     IDs are free; then, if one more node can hold what is still needed, the smallest such node
//     (best fit, keeps big nodes whole for big requests), else the node with most IDs, repeated.
//     Ties go to the lower node number; unknown NUMA (-1) is a node of its own, taken last.
//  3. PCIe: within those nodes, IDs are added one by one, each time the one closest to the
//     devices already chosen — distance = hops between the two functions in the PCIe tree
//     (from their pcie_path), 0 for the same device — preferring an ID on a device not yet
//     used (a pod asking for two gets two HCAs when it can). When nothing is chosen yet every
//     device is tried as the seed and the tightest set wins.
//  4. Remaining ties: natural order of the ID ("mlx5_2-10" after "mlx5_2-9").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rdmak8s::dp {

struct IdLocality {
  std::string rdma_dev;
  int numa_node = -1;
  std::vector<std::string> pcie_path;  // root port ... function; empty when not PCI
};

using LocalityFn = std::function<std::optional<IdLocality>(const std::string& id)>;

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const LocalityFn& locality);

// Hops between two devices in the PCIe tree (0 for the same rdma_dev).
int PcieDistance(const IdLocality& a, const IdLocality& b);
// "a-2" < "a-10": digit runs compare as numbers.
bool NaturalLess(const std::string& a, const std::string& b);

}  // namespace rdmak8s::dp
