#include "device-plugin/config/config.h"
#include "support/temp_dir.h"

#include <fstream>

#include <gtest/gtest.h>

namespace rdmak8s::dp {
namespace {

TEST(ConfigTest, ParsesEveryField) {
  auto cfg = ParseConfig(R"({
    "resourcePrefix": "rdma.example.com",
    "pools": [
      {"name": "ib", "mode": "shared", "capacity": 8,
       "selectors": {"vendors": ["0x15B3"], "deviceIDs": ["101b"], "drivers": ["mlx5_core"],
                     "pciAddresses": ["0000:3B:00.0"], "rdmaDevices": ["mlx5_0"],
                     "netdevs": ["ib0"], "linkTypes": ["infiniband"], "transports": ["ib"],
                     "numaNodes": [0, -1], "isVF": false, "pfNames": ["ens1f0"]},
       "allocate": {"ncclEnv": true, "ucxEnv": true, "issm": true, "roceUmad": false,
                    "env": {"NCCL_DEBUG": "INFO"}}},
      {"name": "vfs", "mode": "exclusive", "selectors": {"isVF": true}}
    ]})");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->resource_prefix, "rdma.example.com");
  ASSERT_EQ(cfg->pools.size(), 2u);
  const PoolConfig& ib = cfg->pools[0];
  EXPECT_EQ(ib.capacity, 8);
  EXPECT_EQ(ib.selectors.vendors, std::vector<std::string>{"15b3"});
  EXPECT_EQ(ib.selectors.pci_addresses, std::vector<std::string>{"0000:3b:00.0"});
  EXPECT_EQ(ib.selectors.numa_nodes, (std::vector<int>{0, -1}));
  EXPECT_EQ(ib.selectors.is_vf, false);
  EXPECT_TRUE(ib.allocate.nccl_env && ib.allocate.ucx_env && ib.allocate.issm);
  EXPECT_EQ(ib.allocate.extra_env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(cfg->pools[1].mode, PoolMode::kExclusive);
  EXPECT_EQ(ResourceName(*cfg, cfg->pools[1]), "rdma.example.com/vfs");
}

TEST(ConfigTest, DefaultsArePrefixRdmaSharedAutoCapacity) {
  auto cfg = ParseConfig(R"({"pools": [{"name": "all", "selectors": {}}]})");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->resource_prefix, "rdma");
  EXPECT_EQ(cfg->pools[0].mode, PoolMode::kShared);
  EXPECT_EQ(cfg->pools[0].capacity, kAutoCapacity);
  EXPECT_EQ(ResourceName(*cfg, cfg->pools[0]), "rdma/all");
}

TEST(ConfigTest, PoolEnvNameUppercasesAndReplacesNonAlnum) {
  EXPECT_EQ(PoolEnvName("hca-shared.v2"), "RDMAK8S_HCA_SHARED_V2_DEVICES");
}

// kubelet merges the env of every Allocate answer a container gets and keeps one value of a key
// set twice (kubelet v1.36.2: "Environment variable has conflicting setting", the container
// starts with the other value lost); one pool's Allocate cannot see the other's. So ncclEnv on two
// pools is left unset by both (said once), and other keys two pools would set to different values
// are named at load.
TEST(ConfigTest, EnvConflictsBetweenPoolsAreNamed) {
  auto cfg = ParseConfig(R"({"pools": [
      {"name": "a", "selectors": {"rdmaDevices": ["mlx5_0"]},
       "allocate": {"ncclEnv": true, "ucxEnv": true, "env": {"NCCL_DEBUG": "INFO", "X": "1"}}},
      {"name": "b", "selectors": {"rdmaDevices": ["mlx5_1"]},
       "allocate": {"ncclEnv": true, "env": {"NCCL_DEBUG": "INFO", "X": "2"}}},
      {"name": "c", "selectors": {}, "allocate": {"env": {"UCX_NET_DEVICES": "all"}}}]})");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const std::string lost =
      ": a container given devices of both gets only one of the values (kubelet keeps one and "
      "logs \"Environment variable has conflicting setting\")";
  EXPECT_EQ(EnvConflicts(*cfg),
            (std::vector<std::string>{
                "pools a, b all opt into ncclEnv: none sets NCCL_IB_HCA (kubelet keeps one value "
                "of a key two Allocate answers set, so a container given devices of two of them "
                "would lose the other's); unset, NCCL uses every RDMA device the container has, "
                "and RDMAK8S_<POOL>_DEVICES names each pool's",
                "pools a and c both set UCX_NET_DEVICES (ucxEnv, env)" + lost,
                "pools a and b both set X (env)" + lost}));
}

TEST(ConfigTest, OneNcclPoolAndEqualStaticEnvAreNoConflict) {
  auto cfg = ParseConfig(R"({"pools": [
      {"name": "a", "selectors": {}, "allocate": {"ncclEnv": true, "env": {"NCCL_DEBUG": "INFO"}}},
      {"name": "b", "selectors": {}, "allocate": {"env": {"NCCL_DEBUG": "INFO"}}}]})");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_TRUE(EnvConflicts(*cfg).empty());
}

struct BadCase {
  const char* name;
  const char* json;
  const char* message;
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadConfigTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfigTest, IsRejectedWithJsonPath) {
  auto cfg = ParseConfig(GetParam().json);
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cfg.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadConfigTest,
    ::testing::Values(
        BadCase{"TopLevelArray", "[]", "$: not an object (array)"},
        BadCase{"UnknownTopField", R"({"pools": [], "poolz": 1})",
                "$.poolz: unknown field (allowed: pools, resourcePrefix)"},
        BadCase{"MissingPools", R"({})", "$.pools: missing"},
        BadCase{"EmptyPools", R"({"pools": []})", "$.pools: must name at least one pool"},
        BadCase{"PoolsNotList", R"({"pools": {}})", "$.pools: not a list (object)"},
        BadCase{"BadPrefix", R"({"resourcePrefix": "RDMA_", "pools": [{"name": "a", "selectors": {}}]})",
                "$.resourcePrefix: \"RDMA_\" is not a DNS subdomain (lower-case, like rdma or "
                "rdma.example.com)"},
        BadCase{"MissingName", R"({"pools": [{"selectors": {}}]})", "$.pools[0].name: missing"},
        BadCase{"BadName", R"({"pools": [{"name": "-x", "selectors": {}}]})",
                "$.pools[0].name: \"-x\" is not a valid resource name (1-63 of [A-Za-z0-9-_.], "
                "starting and ending alphanumeric)"},
        BadCase{"DuplicateName",
                R"({"pools": [{"name": "a", "selectors": {}}, {"name": "a", "selectors": {}}]})",
                "$.pools[1].name: duplicate pool name \"a\""},
        BadCase{"UnknownPoolField", R"({"pools": [{"name": "a", "selectors": {}, "size": 1}]})",
                "$.pools[0].size: unknown field (allowed: allocate, capacity, mode, name, selectors)"},
        BadCase{"BadMode", R"({"pools": [{"name": "a", "mode": "solo", "selectors": {}}]})",
                "$.pools[0].mode: \"solo\" is not one of shared, exclusive"},
        BadCase{"ZeroCapacity", R"({"pools": [{"name": "a", "capacity": 0, "selectors": {}}]})",
                "$.pools[0].capacity: must be \"auto\" or an integer 1..1000, got 0"},
        BadCase{"CapacityOnExclusive",
                R"({"pools": [{"name": "a", "mode": "exclusive", "capacity": 2, "selectors": {}}]})",
                "$.pools[0].capacity: only applies to shared pools (exclusive is one ID per device)"},
        BadCase{"MissingSelectors", R"({"pools": [{"name": "a"}]})",
                "$.pools[0].selectors: missing (use {} only if the pool should take every "
                "device)"},
        BadCase{"UnknownSelector", R"({"pools": [{"name": "a", "selectors": {"vendor": ["15b3"]}}]})",
                "$.pools[0].selectors.vendor: unknown field (allowed: deviceIDs, drivers, isVF, "
                "linkTypes, netdevs, numaNodes, pciAddresses, pfNames, rdmaDevices, transports, "
                "vendors)"},
        BadCase{"BadVendor", R"({"pools": [{"name": "a", "selectors": {"vendors": ["15b"]}}]})",
                "$.pools[0].selectors.vendors[0]: \"15b\" is not a 4-digit hex PCI vendor ID"},
        BadCase{"BadDeviceId", R"({"pools": [{"name": "a", "selectors": {"deviceIDs": ["zzzz"]}}]})",
                "$.pools[0].selectors.deviceIDs[0]: \"zzzz\" is not a 4-digit hex PCI device ID"},
        BadCase{"EmptySelectorList", R"({"pools": [{"name": "a", "selectors": {"drivers": []}}]})",
                "$.pools[0].selectors.drivers: must not be empty (leave the selector out to match "
                "all)"},
        BadCase{"SelectorNotList", R"({"pools": [{"name": "a", "selectors": {"netdevs": "ib0"}}]})",
                "$.pools[0].selectors.netdevs: not a list (string)"},
        BadCase{"BadPciAddress",
                R"({"pools": [{"name": "a", "selectors": {"pciAddresses": ["3b:00.0"]}}]})",
                "$.pools[0].selectors.pciAddresses[0]: \"3b:00.0\" is not a PCI address like "
                "0000:3b:00.0"},
        BadCase{"BadLinkType", R"({"pools": [{"name": "a", "selectors": {"linkTypes": ["ib"]}}]})",
                "$.pools[0].selectors.linkTypes[0]: \"ib\" is not one of ethernet, infiniband"},
        BadCase{"BadTransport",
                R"({"pools": [{"name": "a", "selectors": {"transports": ["rocev2"]}}]})",
                "$.pools[0].selectors.transports[0]: \"rocev2\" is not one of ib, iwarp, roce"},
        BadCase{"BadNuma", R"({"pools": [{"name": "a", "selectors": {"numaNodes": ["0"]}}]})",
                "$.pools[0].selectors.numaNodes[0]: must be a NUMA node number (0..1023, or -1 "
                "for unknown), got \"0\""},
        BadCase{"BadIsVF", R"({"pools": [{"name": "a", "selectors": {"isVF": "yes"}}]})",
                "$.pools[0].selectors.isVF: not a boolean (string)"},
        BadCase{"UnknownAllocateField",
                R"({"pools": [{"name": "a", "selectors": {}, "allocate": {"nccl": true}}]})",
                "$.pools[0].allocate.nccl: unknown field (allowed: env, issm, ncclEnv, roceUmad, "
                "ucxEnv)"},
        BadCase{"AllocateFlagNotBool",
                R"({"pools": [{"name": "a", "selectors": {}, "allocate": {"issm": 1}}]})",
                "$.pools[0].allocate.issm: not a boolean (number)"},
        BadCase{"BadEnvName",
                R"({"pools": [{"name": "a", "selectors": {}, "allocate": {"env": {"1X": "y"}}}]})",
                "$.pools[0].allocate.env.1X: is not a valid environment variable name"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(ConfigTest, SyntaxErrorNamesPosition) {
  auto cfg = ParseConfig("{\"pools\": [");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cfg.status().message().find("$: not JSON: "), std::string::npos);
  EXPECT_NE(cfg.status().message().find("line 1"), std::string::npos) << cfg.status().message();
}

// Issue 32 item 4: every input goes through the one reader's nesting bound.
TEST(ConfigTest, NestingPastTheReadersBoundIsRefusedNamingIt) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto cfg = ParseConfig(R"({"pools": )" + deep + "}");
  ASSERT_FALSE(cfg.ok());
  EXPECT_EQ(cfg.status().message(), "$: nested deeper than 128 levels (json_reader::kMaxDepth)");
}

TEST(ConfigTest, CdiNeedsPoolNamesAndPrefixThatAreValidCdiKinds) {
  auto ok = ParseConfig(R"({"resourcePrefix": "rdma.example.com",
                            "pools": [{"name": "hca_1.a-b", "selectors": {}}]})");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ValidateForCdi(*ok).ok());

  // Valid resource names that CDI refuses: a class must start with a letter.
  auto digit = ParseConfig(R"({"pools": [{"name": "a", "selectors": {}}, {"name": "1gpu", "selectors": {}}]})");
  ASSERT_TRUE(digit.ok()) << "kubelet takes it";
  Status s = ValidateForCdi(*digit);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "$.pools[1].name: \"1gpu\" cannot be a CDI class (--cdi): it must start with a letter");

  auto prefix = ParseConfig(R"({"resourcePrefix": "1rdma.example.com", "pools": [{"name": "a", "selectors": {}}]})");
  ASSERT_TRUE(prefix.ok()) << prefix.status().ToString();
  EXPECT_EQ(ValidateForCdi(*prefix).message(),
            "$.resourcePrefix: \"1rdma.example.com\" cannot be a CDI vendor (--cdi): it must start with a letter");
}

TEST(ConfigTest, LoadConfigFileNamesTheFile) {
  auto missing = LoadConfigFile("/nonexistent/rdmak8s.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "config /nonexistent/rdmak8s.json: open: No such file or directory");

  const rdmak8s::testing::TempDir tmp;  // removed with what the test wrote, even on a failure
  const std::string& dir = tmp.path();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/c.json";
  std::ofstream(path) << R"({"pools": [{"name": "a", "mode": "x", "selectors": {}}]})";
  auto bad = LoadConfigFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "config " + path + ": $.pools[0].mode: \"x\" is not one of shared, exclusive");
}

}  // namespace
}  // namespace rdmak8s::dp
