// The fast preferred allocation (device-plugin/preferred_allocation/) against the reference
// implementation of the documented algorithm (preferred_allocation_reference.h): the same answer
// on many generated inputs (pool sizes, NUMA layouts, PCIe trees, must-include sets, sizes, IDs
// of no known device, repeated IDs), from a fixed seed so every run checks the same cases.
#include <algorithm>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "device-plugin/preferred_allocation/device_name_index.h"
#include "device-plugin/preferred_allocation/preferred_allocation.h"
#include "preferred_allocation_reference.h"

namespace rdmak8s::dp {
namespace {

using testing::ReferencePreferredAllocation;

struct Case {
  AllocationTopology topology;
  std::vector<std::string> available;
  std::vector<std::string> must;
  int size = 0;
  bool shared = false;
};

std::string Describe(const Case& c) {
  std::ostringstream out;
  out << (c.shared ? "shared" : "exclusive") << " size=" << c.size << "\n devices:";
  for (const IdLocality& l : c.topology.devices) {
    out << " " << l.rdma_dev << "@" << l.numa_node << "[";
    for (const std::string& e : l.pcie_path) out << e << "/";
    out << "]";
  }
  out << "\n available:";
  for (const std::string& id : c.available) out << " " << id;
  out << "\n must:";
  for (const std::string& id : c.must) out << " " << id;
  return out.str();
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool OneIn(size_t n) { return Below(n) == 0; }

  // A random PCIe path: a root port, then bridges with few children each (so that siblings,
  // cousins and far devices all occur), then the function; sometimes the same function as an
  // earlier device (ports or SFs of one function), sometimes none (not PCI).
  std::vector<std::string> Path(const std::vector<IdLocality>& earlier) {
    if (OneIn(8)) return {};
    if (!earlier.empty() && OneIn(8)) return earlier[Below(earlier.size())].pcie_path;
    std::vector<std::string> path;
    std::string at = "r" + std::to_string(Below(3));
    path.push_back(at);
    const size_t depth = Below(4);
    for (size_t i = 0; i < depth; ++i) {
      at += "." + std::to_string(Below(2));
      path.push_back(at);
    }
    path.push_back(at + ".f" + std::to_string(next_function_++));
    return path;
  }

  // max_size caps the request (the reference is quadratic in it, and more seeds the same).
  Case Make(size_t max_devices, int max_size = 1 << 20) {
    Case c;
    c.shared = OneIn(2);
    const size_t n = Below(max_devices + 1);
    // Unique names, some of them of another family, in natural order (as PoolTopology lists
    // them) or shuffled (a hand-made topology).
    std::vector<size_t> numbers(3 * n + 4);
    for (size_t i = 0; i < numbers.size(); ++i) numbers[i] = i;
    std::shuffle(numbers.begin(), numbers.end(), rng_);
    const size_t numa_layout = Below(4);
    for (size_t d = 0; d < n; ++d) {
      IdLocality l;
      l.rdma_dev = OneIn(5) ? "rocep" + std::to_string(numbers[d]) + "s0f0"
                            : "mlx5_" + std::to_string(numbers[d]);
      switch (numa_layout) {
        case 0: l.numa_node = -1; break;
        case 1: l.numa_node = 0; break;
        case 2: l.numa_node = static_cast<int>(Below(3)) - 1; break;
        default: l.numa_node = static_cast<int>(Below(4)); break;
      }
      l.pcie_path = Path(c.topology.devices);
      c.topology.devices.push_back(std::move(l));
    }
    if (OneIn(2)) {
      std::sort(c.topology.devices.begin(), c.topology.devices.end(),
                [](const IdLocality& a, const IdLocality& b) { return NaturalLess(a.rdma_dev, b.rdma_dev); });
    }
    // The IDs: "<dev>-<k>" for a shared pool (a few to many per device, numbers past 9 so that
    // natural order matters), the device names for an exclusive one; plus IDs of no known
    // device and repeats.
    std::vector<std::string> names;
    for (const IdLocality& l : c.topology.devices) names.push_back(l.rdma_dev);
    auto by_id = std::make_shared<std::unordered_map<std::string, int>>();
    for (size_t d = 0; d < n; ++d) {
      if (c.shared) {
        const size_t ids = 1 + Below(12);
        for (size_t k = 0; k < ids; ++k) {
          if (OneIn(6)) continue;  // allocated already
          c.available.push_back(names[d] + "-" + std::to_string(k));
        }
      } else if (!OneIn(6)) {
        c.available.push_back(names[d]);
        (*by_id)[names[d]] = static_cast<int>(d);
      }
    }
    std::vector<std::string> unknown;
    for (size_t u = Below(4) == 0 ? 1 + Below(4) : 0; u > 0; --u) {
      unknown.push_back(c.shared ? "zz" + std::to_string(Below(3)) + "-" + std::to_string(Below(3))
                                 : "zz" + std::to_string(Below(5)));
    }
    c.available.insert(c.available.end(), unknown.begin(), unknown.end());
    if (!c.available.empty() && OneIn(8)) c.available.push_back(c.available[Below(c.available.size())]);
    std::shuffle(c.available.begin(), c.available.end(), rng_);
    // Must-include: none mostly; else a few available IDs, an unknown one, repeats.
    if (OneIn(3)) {
      for (size_t m = 1 + Below(3); m > 0; --m) {
        if (!c.available.empty() && !OneIn(5)) {
          c.must.push_back(c.available[Below(c.available.size())]);
        } else if (!names.empty() && OneIn(2)) {
          c.must.push_back(c.shared ? names[Below(n)] + "-99" : names[Below(n)]);
          if (!c.shared) (*by_id)[c.must.back()] = static_cast<int>(std::find(names.begin(), names.end(), c.must.back()) - names.begin());
        } else {
          c.must.push_back("zz" + std::to_string(Below(9)));
        }
      }
    }
    c.size = std::min(max_size, static_cast<int>(Below(c.available.size() + c.must.size() + 4)) - 1);
    if (c.shared) {
      c.topology.by_name = std::make_shared<const DeviceNameIndex>(names);
    } else {
      c.topology.device_of = [by_id](std::string_view id) {
        auto it = by_id->find(std::string(id));
        return it == by_id->end() ? -1 : it->second;
      };
    }
    if (OneIn(2)) {  // prepared once per topology, as PoolTopology does; else per request
      c.topology.paths = InternPaths(c.topology.devices);
      c.topology.prepared = PrepareDevices(c.topology.devices, c.topology.paths);
    }
    return c;
  }

 private:
  std::mt19937 rng_;
  size_t next_function_ = 0;
};

void ExpectSameAsReference(const Case& c, const std::string& label) {
  const std::vector<std::string> want = ReferencePreferredAllocation(c.available, c.must, c.size, c.topology);
  const std::vector<std::string> got = PreferredAllocation(c.available, c.must, c.size, c.topology);
  std::vector<std::string_view> views(c.available.begin(), c.available.end());
  const std::vector<std::string> got_views = PreferredAllocation(views, c.must, c.size, c.topology);
  ASSERT_EQ(got, want) << label << "\n" << Describe(c);
  ASSERT_EQ(got_views, want) << label << " (IDs as views)\n" << Describe(c);
}

TEST(PreferredAllocationDifferentialTest, FastMatchesReferenceOnSmallPools) {
  Generator gen(20261203);
  for (int i = 0; i < 2500; ++i) {
    ExpectSameAsReference(gen.Make(12), "small case " + std::to_string(i));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Pools whose picked devices lie more than 64 numbers apart and more than 8 of them: the scan's
// other two ways of finding the picked devices' IDs.
TEST(PreferredAllocationDifferentialTest, FastMatchesReferenceOnLargePools) {
  Generator gen(4242);
  for (int i = 0; i < 60; ++i) {
    ExpectSameAsReference(gen.Make(160, 24), "large case " + std::to_string(i));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// 66,000 devices: more than 16-bit device numbers hold, so the scan works on 32-bit ones.
TEST(PreferredAllocationDifferentialTest, FastMatchesReferenceWithMoreDevicesThanSixteenBits) {
  Case c;
  std::vector<std::string> names;
  auto by_id = std::make_shared<std::unordered_map<std::string, int>>();
  for (int d = 0; d < 66000; ++d) {
    IdLocality l{"mlx5_" + std::to_string(d), d % 2, {}};
    if (d % 1000 == 7) l.pcie_path = {"r0", "r0.f" + std::to_string(d)};
    (*by_id)[l.rdma_dev] = d;
    c.available.push_back(l.rdma_dev);
    c.topology.devices.push_back(std::move(l));
  }
  std::mt19937 rng(7);
  std::shuffle(c.available.begin(), c.available.end(), rng);
  c.topology.device_of = [by_id](std::string_view id) {
    auto it = by_id->find(std::string(id));
    return it == by_id->end() ? -1 : it->second;
  };
  c.size = 3;
  ExpectSameAsReference(c, "wide, no must-include");
  c.must = {"mlx5_65007", "mlx5_12"};
  c.size = 4;
  ExpectSameAsReference(c, "wide, two must-include");
}

}  // namespace
}  // namespace rdmak8s::dp
