// Preferred allocation, step 3: which devices give the IDs, by PCIe closeness. Internal to
// preferred allocation (device-plugin/preferred_allocation/preferred_allocation.h).
#pragma once

#include <cstddef>
#include <vector>

#include "device-plugin/preferred_allocation/distance.h"

namespace rdmak8s::dp::preferred_allocation {

// Step 3: the picked devices (positions in `devs`, one per ID, `need` of them at most; a device
// repeats once every device is used): grown greedily, each pick the device closest to those
// chosen (distance sums kept up to date per pick), from the must-include devices `base` when
// there are some, else from each seed (the first device under each of the `parents_total`
// parent bridges, PreparedDevices::parent; of the parents with enough devices for the whole
// request only the first; at most 16), the tightest set winning (the first of equal ones).
std::vector<size_t> PickDevices(const std::vector<Dev>& devs, const std::vector<Dev>& base,
                                size_t parents_total, size_t need);

}  // namespace rdmak8s::dp::preferred_allocation
