// A reference implementation of GetPreferredAllocation's algorithm, written straight from its
// description (device-plugin/preferred_allocation/preferred_allocation.h, docs/device-plugin.md#preferred-allocation)
// with no speed tricks: plain strings, whole-list scans, one step after the other. The fast path
// (device-plugin/preferred_allocation/) must give the same answer for every input:
// preferred_allocation_differential_test.cc checks it on many.
#pragma once

#include <string>
#include <vector>

#include "device-plugin/preferred_allocation/preferred_allocation.h"

namespace rdmak8s::dp::testing {

std::vector<std::string> ReferencePreferredAllocation(const std::vector<std::string>& available,
                                                      const std::vector<std::string>& must_include,
                                                      int size, const AllocationTopology& topology);

}  // namespace rdmak8s::dp::testing
