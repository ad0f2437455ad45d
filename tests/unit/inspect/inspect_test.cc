#include "inspect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/sysfs_builder.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::inspect {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Fixture(const std::string& name) {
  return std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name;
}

struct Output {
  int rc = -1;
  std::string out;
  std::string err;
};

Output RunOn(const std::string& root, bool as_json) {
  Options options;
  options.sysfs_root = root;
  options.json = as_json;
  SysfsDiscovery discovery({root, nullptr});
  std::ostringstream out, err;
  Output o;
  o.rc = Run(options, discovery, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

json JsonOf(const std::string& fixture) {
  Output o = RunOn(Fixture(fixture), true);
  EXPECT_EQ(o.rc, kExitOk) << o.err;
  return json::parse(o.out, nullptr, /*allow_exceptions=*/false);
}

std::vector<std::string> Keys(const json& j) {
  std::vector<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.push_back(it.key());
  return k;
}

TEST(InspectJsonTest, DeviceObjectsHaveExactlyTheIssueFields) {
  json j = JsonOf("mlx5_ib_2port");
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_THAT(Keys(j[0]), ::testing::UnorderedElementsAre(
                              "name", "transport", "node_type", "node_guid", "driver", "numa_node",
                              "pci_address", "parent_kind", "char_devices", "netdevs", "ports"));
  EXPECT_THAT(Keys(j[0]["ports"][0]),
              ::testing::UnorderedElementsAre("port_num", "state", "phys_state", "link_layer",
                                              "rate", "gids"));
  EXPECT_THAT(Keys(j[0]["ports"][0]["gids"][0]),
              ::testing::UnorderedElementsAre("index", "gid", "type", "netdev"));
}

TEST(InspectJsonTest, Mlx5IbValues) {
  json d = JsonOf("mlx5_ib_2port")[0];
  EXPECT_EQ(d["name"], "mlx5_0");
  EXPECT_EQ(d["transport"], "ib");
  EXPECT_EQ(d["node_type"], "CA");
  EXPECT_EQ(d["node_guid"], "b859:9f03:00a1:2b3c");
  EXPECT_EQ(d["driver"], "mlx5_core");
  EXPECT_EQ(d["numa_node"], 0);
  EXPECT_EQ(d["pci_address"], "0000:3b:00.0");
  EXPECT_EQ(d["parent_kind"], "pci");
  EXPECT_EQ(d["char_devices"],
            json({"/dev/infiniband/uverbs0", "/dev/infiniband/umad0", "/dev/infiniband/issm0",
                  "/dev/infiniband/umad1", "/dev/infiniband/issm1", "/dev/infiniband/rdma_cm"}));
  EXPECT_EQ(d["netdevs"], json({"ib0", "ib0.8001", "ib1"}));
  ASSERT_EQ(d["ports"].size(), 2u);
  const json& p1 = d["ports"][0];
  EXPECT_EQ(p1["port_num"], 1);
  EXPECT_EQ(p1["state"], "ACTIVE");
  EXPECT_EQ(p1["phys_state"], "LinkUp");
  EXPECT_EQ(p1["link_layer"], "InfiniBand");
  EXPECT_EQ(p1["rate"], "200 Gb/sec (4X HDR)");
  EXPECT_EQ(p1["gids"],
            json::parse(R"([{"index":0,"gid":"fe80:0000:0000:0000:b859:9f03:00a1:2b3c",
                             "type":"IB","netdev":null}])"));
  EXPECT_EQ(d["ports"][1]["state"], "DOWN");
  EXPECT_EQ(d["ports"][1]["phys_state"], "Polling");
}

TEST(InspectJsonTest, Mlx5RoceSriovValues) {
  json j = JsonOf("mlx5_roce_sriov");
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["transport"], "roce");
  EXPECT_EQ(j[0]["numa_node"], 1);
  EXPECT_EQ(j[0]["netdevs"], json({"ens1f0np0", "ens1f0np0.100", "mv0"}));
  EXPECT_EQ(j[0]["ports"][0]["gids"].size(), 8u);
  EXPECT_EQ(j[0]["ports"][0]["gids"][1]["type"], "RoCE v2");
  EXPECT_EQ(j[0]["ports"][0]["gids"][4]["netdev"], "ens1f0np0.100");
  EXPECT_EQ(j[1]["pci_address"], "0000:5e:00.2");
  EXPECT_EQ(j[1]["parent_kind"], "pci");
  EXPECT_EQ(j[3]["name"], "mlx5_3");
  EXPECT_EQ(j[3]["parent_kind"], "auxiliary");
  EXPECT_EQ(j[3]["pci_address"], "0000:5e:00.0");
  EXPECT_EQ(j[3]["driver"], "mlx5_core.sf");
}

TEST(InspectJsonTest, EveryFixtureHasItsTransport) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"mlx5_ib_2port", "ib"},     {"mlx5_roce_sriov", "roce"}, {"irdma_iwarp", "iwarp"},
      {"irdma_roce", "roce"},
      {"cxgb4_iwarp", "iwarp"},    {"bnxt_re_roce", "roce"},    {"rxe_veth", "roce"},
      {"siw_veth", "iwarp"},       {"efa_unknown", "unknown"},
  };
  for (const auto& [fixture, transport] : cases) {
    SCOPED_TRACE(fixture);
    json j = JsonOf(fixture);
    ASSERT_GE(j.size(), 1u);
    for (const json& d : j) EXPECT_EQ(d["transport"], transport);
  }
}

TEST(InspectJsonTest, SoftDevicesAreVirtualWithoutPciAddress) {
  for (const char* fixture : {"rxe_veth", "siw_veth"}) {
    SCOPED_TRACE(fixture);
    json d = JsonOf(fixture)[0];
    EXPECT_EQ(d["parent_kind"], "virtual");
    EXPECT_TRUE(d["pci_address"].is_null());
    EXPECT_EQ(d["numa_node"], -1);
    EXPECT_EQ(d["netdevs"], json({"veth0"}));
  }
  EXPECT_EQ(JsonOf("siw_veth")[0]["driver"], "siw");
  EXPECT_EQ(JsonOf("rxe_veth")[0]["driver"], "rxe");
}

TEST(InspectTableTest, TableShowsTransportPlacementPortsAndGids) {
  Output o = RunOn(Fixture("mlx5_roce_sriov"), false);
  EXPECT_EQ(o.rc, kExitOk);
  EXPECT_EQ(o.err, "");
  EXPECT_THAT(o.out, HasSubstr("mlx5_0  transport roce (v1+v2)"));
  EXPECT_THAT(o.out, HasSubstr("pci 0000:5e:00.0 [15b3:101d]  NUMA 1  SR-IOV 2/8 VFs"));
  EXPECT_THAT(o.out, HasSubstr("VF 1 of 0000:5e:00.0"));
  EXPECT_THAT(o.out, HasSubstr("auxiliary mlx5_core.sf.2 on 0000:5e:00.0"));
  EXPECT_THAT(o.out, HasSubstr("/dev/infiniband/uverbs0 (231:192)"));
  EXPECT_THAT(o.out, HasSubstr("port 1   ACTIVE  LinkUp  Ethernet  100 Gb/sec (4X EDR)"));
  EXPECT_THAT(o.out, HasSubstr("netdevs ens1f0np0, ens1f0np0.100, mv0"));
  EXPECT_THAT(o.out,
              HasSubstr("GID   3  0000:0000:0000:0000:0000:ffff:c0a8:0a01  RoCE v2  ens1f0np0"));
}

TEST(InspectTableTest, IbTableShowsLidsAndPkeys) {
  Output o = RunOn(Fixture("mlx5_ib_2port"), false);
  EXPECT_EQ(o.rc, kExitOk);
  EXPECT_THAT(o.out, HasSubstr("lid 0x1a  sm_lid 0x1  lmc 0"));
  EXPECT_THAT(o.out, HasSubstr("pkeys   0xffff 0x8001"));
}

TEST(InspectRunTest, HostWithoutRdmaSaysSoPlainlyAndSucceeds) {
  Output o = RunOn(Fixture("no_rdma"), false);
  EXPECT_EQ(o.rc, kExitOk);
  EXPECT_THAT(o.out, HasSubstr("No RDMA on this host"));
  EXPECT_THAT(o.out, HasSubstr("no_rdma/class/infiniband does not exist"));
}

TEST(InspectRunTest, HostWithoutRdmaInJsonPrintsAnEmptyArray) {
  Output o = RunOn(Fixture("no_rdma"), true);
  EXPECT_EQ(o.rc, kExitOk);
  EXPECT_EQ(json::parse(o.out, nullptr, false), json::array());
  EXPECT_THAT(o.err, HasSubstr("No RDMA on this host"));
}

TEST(InspectRunTest, UnreadableTreeExitsNonZeroNamingThePath) {
  testing::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  fs::create_directories(tmp.path() + "/class");
  std::ofstream(tmp.path() + "/class/infiniband") << "a file, not the class directory\n";
  Output o = RunOn(tmp.path(), false);
  EXPECT_EQ(o.rc, kExitError);
  EXPECT_THAT(o.err, HasSubstr(tmp.path() + "/class/infiniband"));
}

TEST(InspectRunTest, PartlyUnreadableTreeListsTheRestAndNamesTheBrokenPath) {
  testing::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  testing::SysfsBuilder b(tmp.path());
  ASSERT_TRUE(testing::BuildScaleTree(b, 2, 0, 4).ok());
  std::string state = tmp.path() + "/" + b.DevicePath("mlx5_1") + "/ports/1/state";
  fs::remove(state);
  fs::create_directory(state);
  Output o = RunOn(tmp.path(), true);
  EXPECT_EQ(o.rc, kExitPartial);
  json j = json::parse(o.out, nullptr, false);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["name"], "mlx5_0");
  EXPECT_THAT(o.err, HasSubstr("mlx5_1"));
  EXPECT_THAT(o.err, HasSubstr("ports/1/state"));
}

// The real binary, once: flags parse, JSON goes to stdout.
TEST(InspectBinaryTest, BinaryPrintsJsonForAFixture) {
  std::string cmd = std::string(RDMAK8S_BINARY_DIR) + "/inspect/rdmak8s-inspect --json " +
                    "--sysfs-root " + Fixture("cxgb4_iwarp");
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  EXPECT_EQ(rc, 0);
  json j = json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << out;
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["name"], "iwp2s0f4");
  EXPECT_EQ(j[0]["ports"][1]["state"], "DOWN");
}

TEST(InspectBinaryTest, BinaryOnThisHostExitsZero) {
  // Build machines have no RDMA: the plain message. With RDMA, a table; either way exit 0.
  std::string cmd = std::string(RDMAK8S_BINARY_DIR) + "/inspect/rdmak8s-inspect 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
  if (!fs::exists("/sys/class/infiniband")) {
    EXPECT_THAT(out, HasSubstr("No RDMA on this host"));
  } else {
    EXPECT_THAT(out, Not(HasSubstr("No RDMA on this host")));
  }
}

}  // namespace
}  // namespace rdmak8s::inspect
