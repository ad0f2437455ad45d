// Preferred allocation, PCIe distance between two devices' localities (the public PcieDistance).
#include "device-plugin/preferred_allocation/distance.h"

namespace rdmak8s::dp {

using preferred_allocation::TreeHops;

int PcieDistance(const IdLocality& a, const IdLocality& b) {
  if (a.rdma_dev == b.rdma_dev) return 0;
  return TreeHops(a.pcie_path, b.pcie_path);
}

}  // namespace rdmak8s::dp
