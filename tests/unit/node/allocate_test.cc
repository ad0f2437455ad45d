// node/allocate: what a container gets for a set of RDMA devices, whichever agent asks — the char
// devices per transport, the env, and the strict "allocate" options (the device plugin's pools
// and the DRA driver's claim parameters both parse through it).
#include "node/allocate.h"

#include <gtest/gtest.h>

#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::node {
namespace {

using namespace dp::testdev;

std::vector<std::string> Names(const std::vector<CharDeviceRef>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) out.push_back(r.name);
  return out;
}

// The header's table, row by row: IB gets umad always and issm only when asked; RoCE gets umad
// only when asked and never issm; iWARP has neither whatever is asked; rdma_cm always, last.
TEST(AllocateCharDevicesTest, EachTransportGetsWhatTheHeadersTableSays) {
  AllocateOptions none;
  AllocateOptions all;
  all.issm = true;
  all.roce_umad = true;
  const RdmaDevice ib = Ib("mlx5_0", 0);
  const RdmaDevice roce = Roce("mlx5_1", 1, "ens1f0");
  const RdmaDevice iwarp = Iwarp("irdma0", 2, "ens785f0");
  using V = std::vector<std::string>;
  EXPECT_EQ(Names(CharDevicesFor(ib, none, "/dev")), (V{"uverbs0", "umad0", "rdma_cm"}));
  EXPECT_EQ(Names(CharDevicesFor(ib, all, "/dev")), (V{"uverbs0", "umad0", "issm0", "rdma_cm"}));
  EXPECT_EQ(Names(CharDevicesFor(roce, none, "/dev")), (V{"uverbs1", "rdma_cm"}));
  EXPECT_EQ(Names(CharDevicesFor(roce, all, "/dev")), (V{"uverbs1", "umad1", "rdma_cm"}))
      << "issm is InfiniBand's: a RoCE device never gets it";
  EXPECT_EQ(Names(CharDevicesFor(iwarp, all, "/dev")), (V{"uverbs2", "rdma_cm"}));
}

TEST(AllocateCharDevicesTest, HostPathIsUnderTheDevRootAndContainerPathIsCanonical) {
  auto refs = CharDevicesFor(Roce("mlx5_1", 1, "ens1f0"), {}, "/host/dev");
  ASSERT_FALSE(refs.empty());
  EXPECT_EQ(refs[0].host_path, "/host/dev/infiniband/uverbs1");
  EXPECT_EQ(refs[0].container_path, "/dev/infiniband/uverbs1");
}

TEST(AllocationEnvTest, DeviceListsOnlyWhenOptedInAndExtraEnvAlways) {
  const RdmaDevice a = Ib("mlx5_0", 0);
  const RdmaDevice b = Roce("mlx5_1", 1, "ens1f0");
  AllocateOptions o;
  o.extra_env["NCCL_DEBUG"] = "INFO";
  auto env = AllocationEnv({&a, &b}, o);
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"NCCL_DEBUG", "INFO"}}));
  o.nccl_env = true;
  o.ucx_env = true;
  env = AllocationEnv({&b, &a}, o);
  EXPECT_EQ(env.at("NCCL_IB_HCA"), "=mlx5_1,mlx5_0") << "'=': exactly these, in the given order";
  EXPECT_EQ(env.at("UCX_NET_DEVICES"), "mlx5_1:1,mlx5_0:1");
}

TEST(ParseAllocateOptionsTest, AllKeysAreRead) {
  auto o = ParseAllocateOptions(
      R"({"ncclEnv": true, "ucxEnv": true, "issm": true, "roceUmad": true, "env": {"A_1": "x"}})");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->nccl_env && o->ucx_env && o->issm && o->roce_umad);
  EXPECT_EQ(o->extra_env, (std::map<std::string, std::string>{{"A_1", "x"}}));
  auto empty = ParseAllocateOptions("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, AllocateOptions{});
}

// Strict: each error is kInvalidArgument naming the JSON path of what was wrong.
TEST(ParseAllocateOptionsTest, BadInputIsRefusedNamingThePath) {
  struct Case {
    const char* json;
    const char* names;
  };
  for (const Case& c : {Case{R"({"ncclEnv": 1})", "$.ncclEnv"},
                        Case{R"({"umad": true})", "umad"},
                        Case{R"({"env": {"1A": "x"}})", "$.env.1A"},
                        Case{R"({"env": {"A-B": "x"}})", "$.env.A-B"},
                        Case{R"({"env": {"A": 1}})", "$.env.A"},
                        Case{R"({"env": []})", "$.env"},
                        Case{R"([])", "$"},
                        Case{R"({"ncclEnv": )", "$"}}) {
    SCOPED_TRACE(c.json);
    auto o = ParseAllocateOptions(c.json);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << o.status().ToString();
    EXPECT_NE(o.status().message().find(c.names), std::string::npos) << o.status().message();
  }
}

}  // namespace
}  // namespace rdmak8s::node
