// Preferred allocation, counting: how many available IDs each device has, from the device numbers
// the scan wrote. Internal to preferred allocation (device-plugin/preferred_allocation/preferred_allocation.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rdmak8s::dp::preferred_allocation {

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

}  // namespace rdmak8s::dp::preferred_allocation
