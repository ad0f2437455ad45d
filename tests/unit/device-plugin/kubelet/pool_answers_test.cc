#include "device-plugin/kubelet/pool_answers.h"
#include "device-plugin/pools/device_list_env.h"

#include <gtest/gtest.h>

#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dp {
namespace {

using namespace testdev;

PoolState State(std::vector<RdmaDevice> devs, PoolMode mode = PoolMode::kExclusive,
                node::AllocateOptions opts = {}) {
  PoolState s;
  s.resource = "rdma/p";
  s.pool.name = "p";
  s.pool.mode = mode;
  s.pool.capacity = 2;
  s.pool.allocate = opts;
  s.cdi_kind = "rdma/p";
  s.dev_root = "/host/dev";
  for (auto& d : devs) s.devices[d.name] = node::TrackedDevice{d, {true, ""}};
  FillIds(s);
  return s;
}

std::vector<std::string> ContainerPaths(const v1beta1::ContainerAllocateResponse& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices()) out.push_back(d.container_path());
  return out;
}

TEST(AllocateTest, InfinibandGetsUverbsUmadAndRdmaCmButNoIssm) {
  auto r = BuildContainerResponse(State({Ib("mlx5_0", 0)}), {"0000:3b:00.0"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ContainerPaths(*r), (std::vector<std::string>{"/dev/infiniband/uverbs0",
                                                          "/dev/infiniband/umad0",
                                                          "/dev/infiniband/rdma_cm"}));
  EXPECT_EQ(r->devices(0).host_path(), "/host/dev/infiniband/uverbs0");
  EXPECT_EQ(r->devices(0).permissions(), "rw");
  EXPECT_EQ(r->envs().at("RDMAK8S_P_DEVICES"), "mlx5_0");
  EXPECT_EQ(r->envs().count("NCCL_IB_HCA"), 0u);
}

TEST(AllocateTest, InfinibandIssmOnlyWhenOptedIn) {
  node::AllocateOptions o;
  o.issm = true;
  auto r = BuildContainerResponse(State({Ib("mlx5_0", 0)}, PoolMode::kExclusive, o), {"0000:3b:00.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ContainerPaths(*r),
            (std::vector<std::string>{"/dev/infiniband/uverbs0", "/dev/infiniband/umad0",
                                      "/dev/infiniband/issm0", "/dev/infiniband/rdma_cm"}));
}

TEST(AllocateTest, RoceGetsUverbsAndRdmaCmAndUmadOnlyWhenOptedIn) {
  auto r = BuildContainerResponse(State({Roce("mlx5_1", 1, "ens1f0")}), {"0000:5e:00.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ContainerPaths(*r),
            (std::vector<std::string>{"/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm"}));
  node::AllocateOptions o;
  o.roce_umad = true;
  r = BuildContainerResponse(State({Roce("mlx5_1", 1, "ens1f0")}, PoolMode::kExclusive, o), {"0000:5e:00.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ContainerPaths(*r),
            (std::vector<std::string>{"/dev/infiniband/uverbs1", "/dev/infiniband/umad1",
                                      "/dev/infiniband/rdma_cm"}));
}

TEST(AllocateTest, IwarpNeverGetsUmad) {
  node::AllocateOptions o;
  o.roce_umad = true;
  o.issm = true;
  auto r = BuildContainerResponse(State({Iwarp("irdma0", 0, "ens785f0")}, PoolMode::kExclusive, o),
                                  {"0000:81:00.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ContainerPaths(*r),
            (std::vector<std::string>{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"}));
}

TEST(AllocateTest, SharedIdsOfOneDeviceGiveItOnceAndRdmaCmOnce) {
  auto s = State({Ib("mlx5_0", 0), Ib("mlx5_1", 1, "0000:3c:00.0")}, PoolMode::kShared);
  auto r = BuildContainerResponse(s, {"mlx5_0-0", "mlx5_0-1", "mlx5_1-0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ContainerPaths(*r),
            (std::vector<std::string>{"/dev/infiniband/uverbs0", "/dev/infiniband/umad0",
                                      "/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs1",
                                      "/dev/infiniband/umad1"}));
  EXPECT_EQ(r->envs().at("RDMAK8S_P_DEVICES"), "mlx5_0,mlx5_1");
}

TEST(AllocateTest, NcclUcxAndExtraEnvWhenOptedIn) {
  node::AllocateOptions o;
  o.nccl_env = true;
  o.ucx_env = true;
  o.extra_env["NCCL_DEBUG"] = "INFO";
  auto s = State({Ib("mlx5_0", 0), Ib("mlx5_1", 1, "0000:3c:00.0")}, PoolMode::kExclusive, o);
  auto r = BuildContainerResponse(s, {"0000:3c:00.0", "0000:3b:00.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->envs().at("NCCL_IB_HCA"), "=mlx5_1,mlx5_0");
  EXPECT_EQ(r->envs().at("UCX_NET_DEVICES"), "mlx5_1:1,mlx5_0:1");
  EXPECT_EQ(r->envs().at("NCCL_DEBUG"), "INFO");
}

// kubelet keeps one value of a key two Allocate answers of a container set: a device-list
// variable two pools opt into is written by neither (NCCL/UCX then use every device the
// container has); a pool alone in opting in writes it.
TEST(AllocateTest, DeviceListEnvSeveralPoolsOptIntoIsLeftOutAndThePoolsListStays) {
  PluginConfig cfg;
  PoolConfig a;
  a.name = "a";
  a.allocate.nccl_env = true;
  a.allocate.ucx_env = true;
  PoolConfig b;
  b.name = "b";
  b.allocate.nccl_env = true;
  PoolConfig c;
  c.name = "c";
  cfg.pools = {a, b, c};
  EXPECT_EQ(SharedDeviceListEnv(cfg, a), std::set<std::string>{"NCCL_IB_HCA"});
  EXPECT_EQ(SharedDeviceListEnv(cfg, b), std::set<std::string>{"NCCL_IB_HCA"});
  EXPECT_EQ(SharedDeviceListEnv(cfg, c), std::set<std::string>{});

  auto s = State({Ib("mlx5_0", 0)}, PoolMode::kExclusive, a.allocate);
  s.env_left_out = SharedDeviceListEnv(cfg, a);
  auto r = BuildContainerResponse(s, {"0000:3b:00.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->envs().count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(r->envs().at("UCX_NET_DEVICES"), "mlx5_0:1") << "a is the only ucxEnv pool";
  EXPECT_EQ(r->envs().at("RDMAK8S_P_DEVICES"), "mlx5_0");
}

TEST(AllocateTest, CdiModeNamesCdiDevicesInsteadOfDeviceSpecs) {
  auto s = State({Ib("mlx5_0", 0)});
  s.cdi = true;
  auto r = BuildContainerResponse(s, {"0000:3b:00.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->devices_size(), 0);
  ASSERT_EQ(r->cdi_devices_size(), 1);
  EXPECT_EQ(r->cdi_devices(0).name(), "rdma/p=mlx5_0");
  EXPECT_EQ(r->envs().at("RDMAK8S_P_DEVICES"), "mlx5_0");
}

TEST(AllocateTest, UnknownIdIsInvalidArgument) {
  auto r = BuildContainerResponse(State({Ib("mlx5_0", 0)}), {"mlx5_9"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "unknown device ID \"mlx5_9\" for rdma/p");
}

TEST(AllocateTest, UnhealthyDeviceIsRefusedWithReason) {
  auto s = State({Ib("mlx5_0", 0)});
  s.devices["mlx5_0"].health = {false, "port 1 state DOWN"};
  auto r = BuildContainerResponse(s, {"0000:3b:00.0"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "device mlx5_0 (ID 0000:3b:00.0) is unhealthy: port 1 state DOWN");
}

TEST(PoolStateTest, SharedPoolAdvertisesCapacityIdsWithNumaTopology) {
  RdmaDevice a = Ib("mlx5_0", 0, "0000:3b:00.0", 1);
  RdmaDevice b = Ib("mlx5_1", 1, "0000:3c:00.0", -1);
  auto s = State({a, b}, PoolMode::kShared);
  auto law = ToListAndWatch(s);
  ASSERT_EQ(law.devices_size(), 4);
  EXPECT_EQ(law.devices(0).id(), "mlx5_0-0");
  EXPECT_EQ(law.devices(1).id(), "mlx5_0-1");
  EXPECT_EQ(law.devices(0).health(), "Healthy");
  ASSERT_EQ(law.devices(0).topology().nodes_size(), 1);
  EXPECT_EQ(law.devices(0).topology().nodes(0).id(), 1);
  EXPECT_FALSE(law.devices(2).has_topology()) << "NUMA -1 must be omitted";
}

TEST(PoolStateTest, AutoCapacityIsCappedByVerbsLimits) {
  PoolConfig p;
  p.mode = PoolMode::kShared;
  p.capacity = kAutoCapacity;
  RdmaDevice d = Ib("mlx5_0", 0);
  EXPECT_EQ(EffectiveCapacity(p, d), kAutoCapacityDefault);
  d.verbs = VerbsAttrs{};
  d.verbs->max_pd = 16;
  d.verbs->max_qp = 1000;
  EXPECT_EQ(EffectiveCapacity(p, d), 16);
  p.mode = PoolMode::kExclusive;
  EXPECT_EQ(DeviceIds(p, d), std::vector<std::string>{"0000:3b:00.0"});
}

// Multus hands the allocated ID to the netdev plugin as deviceID/pciBusID: host-device and
// sriov-cni need the PCI address, an SF's plugin the auxiliary device name; a soft device has no
// bus device and keeps its RDMA name.
TEST(PoolStateTest, ExclusiveIdIsTheBusDeviceTheNetdevPluginFindsTheFunctionBy) {
  RdmaDevice vf = Roce("mlx5_2", 2, "ens1f0v1", "0000:5e:00.3");
  EXPECT_EQ(ExclusiveId(vf), "0000:5e:00.3");
  RdmaDevice sf = Roce("mlx5_3", 3, "enp94s0f0s2");
  sf.parent.kind = ParentKind::kAuxiliary;
  sf.parent.aux_name = "mlx5_core.sf.2";
  EXPECT_EQ(ExclusiveId(sf), "mlx5_core.sf.2");
  RdmaDevice rxe = Roce("rxe0", 4, "veth0");
  rxe.parent = Parent{ParentKind::kVirtual, std::nullopt, "", "veth0"};
  EXPECT_EQ(ExclusiveId(rxe), "rxe0");
}

TEST(PoolStateTest, TwoExclusiveDevicesOnOneFunctionFallBackToTheirRdmaNames) {
  auto s = State({Ib("mlx5_0", 0, "0000:3b:00.0"), Ib("mlx5_1", 1, "0000:3b:00.0"),
                  Ib("mlx5_2", 2, "0000:3c:00.0")});
  EXPECT_EQ(s.ids, (std::vector<std::string>{"mlx5_0", "mlx5_1", "0000:3c:00.0"}));
  EXPECT_EQ(s.ForId("mlx5_1")->dev.name, "mlx5_1");
  EXPECT_EQ(s.ForId("0000:3c:00.0")->dev.name, "mlx5_2");
}

}  // namespace
}  // namespace rdmak8s::dp
