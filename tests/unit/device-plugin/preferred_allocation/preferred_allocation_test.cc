#include "device-plugin/preferred_allocation/preferred_allocation.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

namespace rdmak8s::dp {
namespace {

// A two-socket node: NUMA 0 has mlx5_0/mlx5_1 under one switch and mlx5_2 under another root
// port; NUMA 1 has mlx5_3 and mlx5_4 under one root port; mlx5_5 has no NUMA information.
std::map<std::string, IdLocality> Topology() {
  return {
      {"mlx5_0", {"mlx5_0", 0, {"0000:00:01.0", "0000:01:00.0", "0000:02:00.0"}}},
      {"mlx5_1", {"mlx5_1", 0, {"0000:00:01.0", "0000:01:00.0", "0000:02:01.0"}}},
      {"mlx5_2", {"mlx5_2", 0, {"0000:00:02.0", "0000:05:00.0"}}},
      {"mlx5_3", {"mlx5_3", 1, {"0000:80:01.0", "0000:81:00.0"}}},
      {"mlx5_4", {"mlx5_4", 1, {"0000:80:01.0", "0000:81:00.1"}}},
      {"mlx5_5", {"mlx5_5", -1, {}}},
  };
}

LocalityFn Exclusive() {
  auto topo = Topology();
  return [topo](const std::string& id) -> std::optional<IdLocality> {
    auto it = topo.find(id);
    if (it == topo.end()) return std::nullopt;
    return it->second;
  };
}

// Shared IDs "<dev>-<k>".
LocalityFn Shared() {
  auto topo = Topology();
  return [topo](const std::string& id) -> std::optional<IdLocality> {
    auto it = topo.find(id.substr(0, id.rfind('-')));
    if (it == topo.end()) return std::nullopt;
    return it->second;
  };
}

const std::vector<std::string> kAll = {"mlx5_5", "mlx5_4", "mlx5_3", "mlx5_2", "mlx5_1", "mlx5_0"};

TEST(PreferredAllocationTest, SingleNumaNodeWhenOneCanHoldTheRequest) {
  // NUMA 1 holds 2 (best fit for 2); NUMA 0 would also fit but is bigger.
  EXPECT_EQ(PreferredAllocation(kAll, {}, 2, Exclusive()),
            (std::vector<std::string>{"mlx5_3", "mlx5_4"}));
}

TEST(PreferredAllocationTest, ClosestOnPcieTreeWithinTheNumaNode) {
  // Three on NUMA 0: must be all of them; asking two with mlx5_1 forced gives its switch peer.
  EXPECT_EQ(PreferredAllocation(kAll, {"mlx5_1"}, 2, Exclusive()),
            (std::vector<std::string>{"mlx5_1", "mlx5_0"}));
}

TEST(PreferredAllocationTest, MustIncludeIsHonouredEvenAcrossNuma) {
  auto got = PreferredAllocation(kAll, {"mlx5_3"}, 3, Exclusive());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "mlx5_3");
  EXPECT_EQ(got[1], "mlx5_4") << "fill the must-include's NUMA node first";
}

TEST(PreferredAllocationTest, SpillsToFewestNumaNodesLargestFirst) {
  // 4 IDs: NUMA 0 (3) + NUMA 1 (1, the closest there), never the unknown node.
  auto got = PreferredAllocation(kAll, {}, 4, Exclusive());
  ASSERT_EQ(got.size(), 4u);
  for (const auto& id : got) EXPECT_NE(id, "mlx5_5");
}

TEST(PreferredAllocationTest, IsDeterministicWhateverTheInputOrder) {
  std::vector<std::string> reversed(kAll.rbegin(), kAll.rend());
  EXPECT_EQ(PreferredAllocation(kAll, {}, 3, Exclusive()),
            PreferredAllocation(reversed, {}, 3, Exclusive()));
}

TEST(PreferredAllocationTest, SharedPrefersDistinctDevicesThenCloseness) {
  std::vector<std::string> avail = {"mlx5_0-0", "mlx5_0-1", "mlx5_1-0", "mlx5_1-1", "mlx5_2-0"};
  EXPECT_EQ(PreferredAllocation(avail, {}, 2, Shared()),
            (std::vector<std::string>{"mlx5_0-0", "mlx5_1-0"}));
}

TEST(PreferredAllocationTest, SizeNotAboveMustIncludeReturnsMustInclude) {
  EXPECT_EQ(PreferredAllocation(kAll, {"mlx5_2", "mlx5_2"}, 1, Exclusive()),
            std::vector<std::string>{"mlx5_2"});
}

TEST(PreferredAllocationTest, NotEnoughAvailableReturnsWhatThereIs) {
  EXPECT_EQ(PreferredAllocation({"mlx5_0"}, {}, 3, Exclusive()), std::vector<std::string>{"mlx5_0"});
}

TEST(PreferredAllocationTest, NaturalOrderComparesNumbers) {
  EXPECT_TRUE(NaturalLess("mlx5_2-9", "mlx5_2-10"));
  EXPECT_FALSE(NaturalLess("mlx5_10", "mlx5_9"));
  EXPECT_TRUE(NaturalLess("a", "b"));
}

TEST(PreferredAllocationTest, NaturalOrderOfLongIdsThatShareLongPrefixes) {
  // Prefixes of 8 bytes and more are compared a word at a time: the first byte that differs,
  // wherever it falls in the word, and digit runs that begin inside the common prefix.
  EXPECT_TRUE(NaturalLess("mlx5_1000-9", "mlx5_1000-10"));
  EXPECT_FALSE(NaturalLess("mlx5_1000-10", "mlx5_1000-9"));
  EXPECT_TRUE(NaturalLess("mlx5_999-0", "mlx5_1000-0")) << "the run began before the difference";
  EXPECT_TRUE(NaturalLess("ib_device_with_a_long_name_0-7", "ib_device_with_a_long_name_1-0"));
  EXPECT_TRUE(NaturalLess("abcdefgh", "abcdefgi"));
  EXPECT_TRUE(NaturalLess("abcdefghi", "abcdefghj"));
  EXPECT_TRUE(NaturalLess("abcdefg", "abcdefgh")) << "a prefix first";
  EXPECT_FALSE(NaturalLess("abcdefgh", "abcdefgh"));
  EXPECT_TRUE(NaturalLess("rocep59s0f0-007", "rocep59s0f0-7")) << "equal numbers: then bytes";
  EXPECT_TRUE(NaturalLess("rocep59s0f0-7", "rocep59s0f0-08"));
  EXPECT_TRUE(NaturalLess("rocep59s0f0-12", "rocep59s0f0-13"));
}

TEST(PreferredAllocationTest, PcieDistanceCountsHopsThroughCommonAncestor) {
  auto t = Topology();
  EXPECT_EQ(PcieDistance(t["mlx5_0"], t["mlx5_1"]), 2);
  EXPECT_EQ(PcieDistance(t["mlx5_0"], t["mlx5_2"]), 5);
  EXPECT_EQ(PcieDistance(t["mlx5_0"], t["mlx5_0"]), 0);
}

// The shape of the bench: 1,024 devices on 2 NUMA nodes, 32 per root port, 100 shared IDs each,
// handed over in kubelet's (unordered) order.
struct BigPool {
  AllocationTopology topo;
  std::vector<std::string> ids;
  mutable int device_of_calls = 0;
};

BigPool MakeBigPool() {
  BigPool p;
  for (int i = 0; i < 1024; ++i) {
    std::string rp = "0000:00:" + std::to_string(1 + i / 32) + ".0";
    p.topo.devices.push_back({"mlx5_" + std::to_string(i), (i / 32) % 2, {rp, "fn" + std::to_string(i)}});
    for (int k = 0; k < 100; ++k) p.ids.push_back("mlx5_" + std::to_string(i) + "-" + std::to_string(k));
  }
  std::shuffle(p.ids.begin(), p.ids.end(), std::mt19937(7));
  return p;
}

TEST(PreferredAllocationTest, LargeSharedPoolGivesDistinctSiblingDevicesAfterOnePassOverTheIds) {
  BigPool p = MakeBigPool();
  BigPool* pp = &p;
  p.topo.device_of = [pp](std::string_view id) {
    pp->device_of_calls++;
    return std::stoi(std::string(id.substr(5, id.rfind('-') - 5)));
  };
  auto got = PreferredAllocation(p.ids, {}, 8, p.topo);
  ASSERT_EQ(got.size(), 8u);
  std::set<std::string> devs, parents;
  std::set<int> numa;
  for (const auto& id : got) {
    int d = std::stoi(id.substr(5, id.rfind('-') - 5));
    devs.insert(p.topo.devices[d].rdma_dev);
    parents.insert(p.topo.devices[d].pcie_path[0]);
    numa.insert(p.topo.devices[d].numa_node);
    EXPECT_EQ(id.substr(id.rfind('-')), "-0") << "each device's naturally first ID";
  }
  EXPECT_EQ(devs.size(), 8u) << "one ID per device";
  EXPECT_EQ(parents.size(), 1u) << "all under one root port";
  EXPECT_EQ(numa.size(), 1u);
  EXPECT_EQ(p.device_of_calls, static_cast<int>(p.ids.size())) << "one look-up per ID, no more";
  std::vector<std::string> sorted = p.ids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(PreferredAllocation(sorted, {}, 8, p.topo), got) << "whatever the input order";
}

TEST(PreferredAllocationTest, MustIncludeOnABigPoolPullsTheRestToItsRootPort) {
  BigPool p = MakeBigPool();
  p.topo.device_of = [](std::string_view id) {
    return std::stoi(std::string(id.substr(5, id.rfind('-') - 5)));
  };
  auto got = PreferredAllocation(p.ids, {"mlx5_100-3"}, 4, p.topo);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "mlx5_100-3");
  for (const auto& id : got) {
    int d = std::stoi(id.substr(5, id.rfind('-') - 5));
    EXPECT_EQ(d / 32, 100 / 32) << id << " is not under mlx5_100's root port";
  }
}

TEST(PreferredAllocationTest, MoreThanTheDevicesTakesEveryDeviceOnceThenRepeats) {
  std::vector<std::string> avail = {"mlx5_0-0", "mlx5_0-1", "mlx5_0-2", "mlx5_1-0", "mlx5_1-1"};
  auto got = PreferredAllocation(avail, {}, 4, Shared());
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.begin() + 2),
            (std::set<std::string>{"mlx5_0-0", "mlx5_1-0"}));
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 4u) << "no ID twice";
}

// A shared pool's state as the server sees it: device names of every length the name index
// reads differently (under 4, 4 to 7, 8 to 16 and beyond 16 bytes), names that are prefixes of
// others, a name with a '-' in it.
PoolState SharedState(const std::vector<std::string>& names) {
  PoolState st;
  st.resource = "rdma/shared";
  st.pool.name = "shared";
  st.pool.mode = PoolMode::kShared;
  st.pool.capacity = 2;
  for (const auto& n : names) {
    RdmaDevice d;
    d.name = n;
    st.devices[n] = node::TrackedDevice{d, {true, ""}};
  }
  return st;
}

const std::vector<std::string> kOddNames = {
    "a", "ib", "mlx5_1", "mlx5_10", "mlx5_100", "rxe-eth0", "ibp59s0f1", "mlx5_bond_0",
    "sixteen_bytes_16", "ib_device_with_a_long_name_0", "ib_device_with_a_long_name_1"};

TEST(PreferredAllocationTest, PoolTopologyFindsASharedIdsDeviceByNameWhateverItsLength) {
  AllocationTopology topo = PoolTopology(SharedState(kOddNames));
  ASSERT_TRUE(topo.by_name);
  ASSERT_EQ(topo.devices.size(), kOddNames.size());
  for (const auto& n : kOddNames) {
    int d = DeviceOf(topo, n + "-1");
    ASSERT_GE(d, 0) << n;
    EXPECT_EQ(topo.devices[static_cast<size_t>(d)].rdma_dev, n);
  }
  for (const char* stray : {"mlx5_1x-0", "mlx5-0", "mlx5_1", "mlx5_-0", "-1", "b-0", "a0-0",
                            "ib_device_with_a_long_name_2-0", "ib_device_with_a_long_name_-0",
                            "sixteen_bytes_17-0", "sixteen_bytes_1-0", "rxe-0", "eth0-0"}) {
    EXPECT_EQ(DeviceOf(topo, stray), -1) << stray;
  }
}

TEST(PreferredAllocationTest, PoolTopologyListsDevicesInNaturalOrder) {
  AllocationTopology topo = PoolTopology(SharedState({"mlx5_10", "mlx5_2", "mlx5_1"}));
  std::vector<std::string> names;
  for (const auto& d : topo.devices) names.push_back(d.rdma_dev);
  EXPECT_EQ(names, (std::vector<std::string>{"mlx5_1", "mlx5_2", "mlx5_10"}));
}

TEST(PreferredAllocationTest, StringsAndViewsOfTheSameIdsGetTheSameAnswer) {
  AllocationTopology topo = PoolTopology(SharedState(kOddNames));
  std::vector<std::string> ids;
  for (const auto& n : kOddNames) ids.insert(ids.end(), {n + "-1", n + "-0"});
  std::shuffle(ids.begin(), ids.end(), std::mt19937(3));
  std::vector<std::string_view> views(ids.begin(), ids.end());
  auto got = PreferredAllocation(ids, {}, 3, topo);
  EXPECT_EQ(PreferredAllocation(views, {}, 3, topo), got);
  // No NUMA, no PCIe: the naturally first devices, each its naturally first ID.
  EXPECT_EQ(got, (std::vector<std::string>{"a-0", "ib-0", "ib_device_with_a_long_name_0-0"}));
}

TEST(PreferredAllocationTest, MustIncludeAndStrayIdsOnASharedPoolTopology) {
  // The name index's every path at once: short names, longer ones, a '-' inside a name, IDs of
  // no device, and must-include IDs that the one pass over the IDs must leave out.
  AllocationTopology topo = PoolTopology(SharedState(kOddNames));
  std::vector<std::string> ids = {"stray-0", "mlx5_-1", "rxe-eth-0"};
  for (const auto& n : kOddNames) ids.insert(ids.end(), {n + "-1", n + "-0", n + "-10"});
  std::shuffle(ids.begin(), ids.end(), std::mt19937(5));
  std::vector<std::string_view> views(ids.begin(), ids.end());
  auto got = PreferredAllocation(views, {"rxe-eth0-1", "a-0"}, 5, topo);
  // Devices not used yet first (a's is, by a must-include ID), in natural order.
  EXPECT_EQ(got, (std::vector<std::string>{"rxe-eth0-1", "a-0", "ib-0",
                                           "ib_device_with_a_long_name_0-0",
                                           "ib_device_with_a_long_name_1-0"}));
  // Everything: every ID once, the strays (devices of their own) among them.
  auto all = PreferredAllocation(views, {"mlx5_100-10"}, static_cast<int>(ids.size()), topo);
  ASSERT_EQ(all.size(), ids.size());
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()), std::set<std::string>(ids.begin(), ids.end()));
  EXPECT_EQ(all.front(), "mlx5_100-10");
  for (const char* stray : {"stray-0", "mlx5_-1", "rxe-eth-0"}) EXPECT_EQ(DeviceOf(topo, stray), -1);
}

// Must-include IDs are told from the available ones only among the IDs of their own devices:
// an available ID that is a must-include one, however often it is given and whether or not its
// device is known, is in the answer once, first.
TEST(PreferredAllocationTest, MustIncludeIdsGivenAgainAmongTheAvailableAreInTheAnswerOnce) {
  AllocationTopology topo = PoolTopology(SharedState(kOddNames));
  std::vector<std::string> ids = {"stray-0", "stray-0", "mlx5_10-1", "mlx5_10-1", "mlx5_10-0"};
  for (const auto& n : kOddNames) ids.insert(ids.end(), {n + "-0", n + "-1"});
  std::shuffle(ids.begin(), ids.end(), std::mt19937(11));
  const std::vector<std::string> must = {"mlx5_10-1", "stray-0", "a-1"};
  auto got = PreferredAllocation(ids, must, 100, topo);
  ASSERT_GE(got.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + 3), must);
  for (const auto& id : must) EXPECT_EQ(std::count(got.begin(), got.end(), id), 1) << id;
  // The other IDs of the must-include IDs' devices are still there to be given.
  EXPECT_EQ(std::count(got.begin(), got.end(), "mlx5_10-0"), 1);
  EXPECT_EQ(std::count(got.begin(), got.end(), "a-0"), 1);
  std::vector<std::string_view> views(ids.begin(), ids.end());
  EXPECT_EQ(PreferredAllocation(views, must, 100, topo), got);
}

TEST(PreferredAllocationTest, MustIncludeIdsOnMoreThanEightDevicesOfABigPool) {
  BigPool p = MakeBigPool();
  p.topo.device_of = [](std::string_view id) {
    return std::stoi(std::string(id.substr(5, id.rfind('-') - 5)));
  };
  std::vector<std::string> must;
  for (int d : {3, 40, 41, 100, 200, 300, 500, 600, 700, 800, 1023}) {
    must.push_back("mlx5_" + std::to_string(d) + "-" + std::to_string(d % 100));
  }
  must.push_back("mlx5_40-7");  // a second one on a device
  auto got = PreferredAllocation(p.ids, must, static_cast<int>(must.size()) + 5, p.topo);
  ASSERT_EQ(got.size(), must.size() + 5);
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + static_cast<long>(must.size())), must);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), got.size()) << "no ID twice";
}

TEST(PreferredAllocationTest, PrepareDevicesNumbersNodesRanksNamesAndParents) {
  const std::vector<IdLocality> devices = {
      {"mlx5_10", 1, {"rp0", "sw", "fn10"}},
      {"mlx5_2", 0, {"rp0", "sw", "fn2"}},
      {"mlx5_2", 3, {"rp1", "fn2b"}},  // a name given twice
      {"rxe0", -1, {}},
      {"mlx5_1", 0, {"rp1", "fn1"}},
      {"ib0", 0, {"fn0"}},  // an endpoint of the root complex: parent is the empty path
  };
  const PreparedDevices p = PrepareDevices(devices, InternPaths(devices));
  EXPECT_EQ(p.nodes, (std::vector<int>{-1, 0, 1, 3}));
  EXPECT_EQ(p.node_of, (std::vector<uint32_t>{2, 1, 3, 0, 1, 1}));
  // Natural order: ib0, mlx5_1, mlx5_2 (position 1), mlx5_2 (position 2), mlx5_10, rxe0.
  EXPECT_EQ(p.rank, (std::vector<uint32_t>{4, 2, 3, 5, 1, 0}));
  EXPECT_EQ(p.same_name, (std::vector<uint32_t>{0, 1, 1, 3, 4, 5}));
  EXPECT_EQ(p.parents, 3u);
  EXPECT_EQ(p.parent[0], p.parent[1]) << "both under rp0/sw";
  EXPECT_EQ(p.parent[2], p.parent[4]) << "both under rp1";
  EXPECT_NE(p.parent[0], p.parent[2]);
  EXPECT_EQ(p.parent[3], -1) << "no PCIe path";
  EXPECT_GE(p.parent[5], 0);
  EXPECT_NE(p.parent[5], p.parent[0]);
  EXPECT_NE(p.parent[5], p.parent[2]);
}

TEST(PreferredAllocationTest, TwoDevicesOfOnePciFunctionAreCloserThanSiblings) {
  // rdma_dev a and b on one function (one PCIe path): 0 hops, as close as one device.
  AllocationTopology topo;
  topo.devices = {{"a", 0, {"rp", "sw", "fn0"}}, {"b", 0, {"rp", "sw", "fn0"}},
                  {"c", 0, {"rp", "sw", "fn1"}}, {"d", 0, {"rp", "fn2"}}};
  topo.device_of = [](std::string_view id) { return id[0] - 'a'; };
  const std::vector<std::string> ids = {"d-0", "c-0", "b-0", "a-0"};
  EXPECT_EQ(PreferredAllocation(ids, {"c-0"}, 2, topo), (std::vector<std::string>{"c-0", "a-0"}));
  EXPECT_EQ(PreferredAllocation(ids, {"b-0"}, 2, topo), (std::vector<std::string>{"b-0", "a-0"}));
  EXPECT_EQ(PreferredAllocation(ids, {"d-0"}, 3, topo),
            (std::vector<std::string>{"d-0", "a-0", "b-0"}));
}

// A big pool whose PCIe siblings are not neighbours in natural order: device i is under root
// port i % 16 (NUMA node i % 2), so the picked devices lie far apart in number.
BigPool MakeStripedPool() {
  BigPool p;
  for (int i = 0; i < 1024; ++i) {
    std::string rp = "0000:00:" + std::to_string(1 + i % 16) + ".0";
    p.topo.devices.push_back({"mlx5_" + std::to_string(i), i % 2, {rp, "fn" + std::to_string(i)}});
    for (int k = 0; k < 20; ++k) p.ids.push_back("mlx5_" + std::to_string(i) + "-" + std::to_string(k));
  }
  std::shuffle(p.ids.begin(), p.ids.end(), std::mt19937(9));
  p.topo.device_of = [](std::string_view id) {
    return std::stoi(std::string(id.substr(5, id.rfind('-') - 5)));
  };
  return p;
}

TEST(PreferredAllocationTest, PickedDevicesFarApartInNumberAreFoundByTheLastPass) {
  // 8 picks under one root port span 8 x 16 device numbers (each compared), 12 picks need the
  // per-device table, 3 lie within 64 numbers (the range test with a gap-free mask, and gaps).
  BigPool p = MakeStripedPool();
  for (int size : {3, 8, 12}) {
    auto got = PreferredAllocation(p.ids, {}, size, p.topo);
    ASSERT_EQ(got.size(), static_cast<size_t>(size));
    std::set<int> devs, ports;
    for (const auto& id : got) {
      const int d = std::stoi(id.substr(5, id.rfind('-') - 5));
      devs.insert(d);
      ports.insert(d % 16);
      EXPECT_EQ(id.substr(id.rfind('-')), "-0") << id;
    }
    EXPECT_EQ(devs.size(), static_cast<size_t>(size)) << "one ID per device";
    EXPECT_EQ(ports.size(), 1u) << "all under one root port";
  }
}

TEST(PreferredAllocationTest, ThePreparedTopologyGivesTheAnswersOfTheUnpreparedOne) {
  // PoolTopology's topology (paths and devices prepared once) against the same devices as a
  // topology assembled by hand, prepared per request.
  PoolState st = SharedState({});
  for (int i = 0; i < 300; ++i) {
    RdmaDevice d;
    d.name = "mlx5_" + std::to_string(i);
    d.parent.kind = ParentKind::kPci;
    PciInfo pci;
    pci.numa_node = (i / 40) % 3 - (i >= 280 ? 2 : 0);  // nodes 0..2, and -1 for the last 20
    pci.pcie_path = {"rp" + std::to_string(i / 20), "sw" + std::to_string(i / 5), "fn" + std::to_string(i)};
    if (i % 50 == 49) pci.pcie_path.clear();
    d.parent.pci = pci;
    st.devices[d.name] = node::TrackedDevice{d, {true, ""}};
  }
  FillIds(st);
  AllocationTopology prepared = PoolTopology(st);
  ASSERT_EQ(prepared.prepared.node_of.size(), prepared.devices.size());
  AllocationTopology by_hand;
  by_hand.devices = prepared.devices;
  by_hand.by_name = prepared.by_name;
  std::vector<std::string> ids = st.ids;
  ids.push_back("stray-1");
  std::shuffle(ids.begin(), ids.end(), std::mt19937(13));
  for (int size : {1, 2, 7, 25, 90, 400, 700}) {
    for (const std::vector<std::string>& must :
         {std::vector<std::string>{}, {"mlx5_7-1"}, {"mlx5_299-0", "stray-1", "mlx5_100-1"}}) {
      EXPECT_EQ(PreferredAllocation(ids, must, size, prepared), PreferredAllocation(ids, must, size, by_hand))
          << size << " with " << must.size() << " must-include";
    }
  }
}

TEST(PreferredAllocationTest, IdsOfNoKnownDeviceAtAllAreDevicesOfTheirOwn) {
  // A topology of no devices: every ID is a device of its own, of unknown NUMA, in natural order.
  auto none = [](const std::string&) -> std::optional<IdLocality> { return std::nullopt; };
  EXPECT_EQ(PreferredAllocation({"b-10", "b-9", "a"}, {}, 2, none), (std::vector<std::string>{"a", "b-9"}));
  EXPECT_EQ(PreferredAllocation({"b-10", "b-9", "a"}, {"b-10"}, 2, none),
            (std::vector<std::string>{"b-10", "a"}));
}

TEST(PreferredAllocationTest, IdsOfNoKnownDeviceComeLast) {
  auto got = PreferredAllocation({"stray", "mlx5_3", "mlx5_4"}, {}, 3, Exclusive());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got.back(), "stray");
}

}  // namespace
}  // namespace rdmak8s::dp
