// GetPreferredAllocation: which `size` IDs kubelet should take from `available`.
//
// Algorithm (deterministic; docs/device-plugin.md#preferred-allocation). It works on devices,
// not IDs: one pass over `available` groups the IDs by device (AllocationTopology::device_of),
// everything after that is bounded by the number of devices, but for one last pass over the
// IDs' device numbers that collects the picked devices' IDs; a shared pool of 1,024 devices ×
// 100 IDs is timed by `make bench` (target: well under a millisecond).
//  1. Every must-include ID is in the answer (in the order given, duplicates dropped).
//  2. NUMA: the rest come from as few NUMA nodes as possible. Nodes already used by must-include
//     IDs are free; then, if one more node can hold what is still needed, the smallest such node
//     (best fit, keeps big nodes whole for big requests), else the node with most IDs, repeated.
//     Ties go to the lower node number; unknown NUMA (-1) is a node of its own, taken last.
//  3. PCIe: within those nodes, devices are picked one by one (one ID each time), each time the
//     one closest to the devices already chosen — distance = hops between the two functions in
//     the PCIe tree (from their pcie_path), 0 for the same device — preferring a device not yet
//     used (a pod asking for two gets two HCAs when it can). With nothing chosen yet, seeds are
//     tried and the tightest set wins: the first device under each distinct parent bridge (at
//     most kMaxSeeds), and among parents holding at least as many devices as needed only the
//     first (siblings are as close as distinct functions get: the others would tie).
//  4. Remaining ties: natural order of the device's name; within a device, natural order of the
//     ID ("mlx5_2-10" after "mlx5_2-9").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device-plugin/pools/pool_state.h"

namespace rdmak8s::dp {

struct IdLocality {
  std::string rdma_dev;
  int numa_node = -1;
  std::vector<std::string> pcie_path;  // root port ... function; empty when not PCI
};

class DeviceNameIndex;  // device_name_index.h

// What every request reads of each device, packed into small dense arrays and derived from the
// devices once (PrepareDevices), so that the steps bounded by the devices do not walk 1,024
// IdLocality records (cold in cache after the pass over 100,000 IDs) or compare their names.
struct PreparedDevices {
  std::vector<int> nodes;           // the devices' distinct NUMA nodes, ascending, -1 among them
  std::vector<uint32_t> node_of;    // per device: its node's place in `nodes`
  std::vector<uint32_t> rank;       // per device: its place in natural order of the names (ties:
                                    // by position)
  std::vector<uint32_t> same_name;  // per device: the first device of its name
  std::vector<int32_t> parent;      // per device: its parent bridge (its path without the last
                                    // element) as a number < parents; -1 for no PCIe path
  size_t parents = 0;
  std::vector<int> path_elems;      // the interned paths, one after another
  std::vector<uint32_t> path_start; // device d's is [path_start[d], path_start[d + 1])
};

// Where a pool's IDs sit: its devices, and which device an ID is on: -1 for an ID of no known
// device (it counts as a device of its own with unknown NUMA and no PCIe path). Asked once per
// available ID, so keep it cheap: with by_name set (a shared pool) an ID "<rdma_dev>-<k>" is on
// the device of that name, found inline; else device_of is called.
struct AllocationTopology {
  std::vector<IdLocality> devices;
  std::function<int(std::string_view id)> device_of;
  std::shared_ptr<const DeviceNameIndex> by_name;
  // InternPaths(devices) and PrepareDevices(devices, paths), kept with the topology so that no
  // request derives them for 1,024 devices again; a topology without them (paths not of the size
  // of `devices`, prepared not filled) gets them derived per request.
  std::vector<std::vector<int>> paths;
  PreparedDevices prepared;
};

// The devices' PCIe paths with each element replaced by a number (equal strings, equal numbers
// across all the devices), so that comparing two paths is comparing integers.
std::vector<std::vector<int>> InternPaths(const std::vector<IdLocality>& devices);
// `devices` as PreparedDevices says, `paths` being InternPaths(devices).
PreparedDevices PrepareDevices(const std::vector<IdLocality>& devices,
                               const std::vector<std::vector<int>>& paths);

// The index in topology.devices of the device an ID is on, -1 for none: what the algorithm
// asks once per available ID.
int DeviceOf(const AllocationTopology& topology, std::string_view id);

std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const AllocationTopology& topology);
// The same on views of the IDs (a request's strings, not copied).
std::vector<std::string> PreferredAllocation(const std::vector<std::string_view>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const AllocationTopology& topology);

// The topology of a pool's state: its devices (NUMA node, PCIe path) in natural order of their
// names, with their interned paths; a shared ID "<rdma_dev>-<k>" is found by its device name
// (by_name: DeviceNameIndex, no per-ID map), an exclusive ID through the state's ID map. Built
// once per published state (PoolServer keeps it), not per request.
AllocationTopology PoolTopology(const PoolState& state);

// Per-ID locality (nullopt: unknown); builds the topology by asking every ID. For small pools
// and tests.
using LocalityFn = std::function<std::optional<IdLocality>(const std::string& id)>;
std::vector<std::string> PreferredAllocation(const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size, const LocalityFn& locality);

// Hops between two devices in the PCIe tree (0 for the same rdma_dev).
int PcieDistance(const IdLocality& a, const IdLocality& b);
// "a-2" < "a-10": digit runs compare as numbers.
bool NaturalLess(std::string_view a, std::string_view b);

}  // namespace rdmak8s::dp
