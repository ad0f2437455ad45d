#include "dra/claim_cdi_spec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

std::vector<std::string> Paths(const json& device) {
  std::vector<std::string> out;
  for (const auto& n : device["containerEdits"]["deviceNodes"]) out.push_back(n["path"]);
  return out;
}

TEST(ClaimCdiSpec, NamesAreUniquePerClaimAndKindIsTheDriver) {
  EXPECT_EQ(ClaimCdiKind("rdma.rdmak8s.io"), "rdma.rdmak8s.io/claim");
  EXPECT_EQ(ClaimCdiDeviceId("rdma.rdmak8s.io", "u1", "mlx5-0"), "rdma.rdmak8s.io/claim=u1-mlx5-0");
  EXPECT_EQ(ClaimCdiSpecPath("/var/run/cdi", "rdma.rdmak8s.io", "u1"), "/var/run/cdi/rdma.rdmak8s.io-claim_u1.json");
  // Two driver names never share a spec file, even for one claim.
  EXPECT_NE(ClaimCdiSpecPath("/var/run/cdi", "a.example.com", "u1"), ClaimCdiSpecPath("/var/run/cdi", "b.example.com", "u1"));
}

TEST(ClaimCdiSpec, IbGetsUmadButIssmOnlyWhenAskedAndRoceNeitherByDefault) {
  node::AllocateOptions issm;
  issm.issm = true;
  std::vector<ClaimDevice> devs = {{"ib", "mlx5-0", dp::testdev::Ib("mlx5_0", 0), issm},
                                   {"eth", "mlx5-2", dp::testdev::Roce("mlx5_2", 2, "eth0"), {}}};
  json spec = json::parse(BuildClaimCdiSpec("rdma.rdmak8s.io", "u1", devs, "/host/dev"));
  EXPECT_EQ(spec["kind"], "rdma.rdmak8s.io/claim");
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], "u1-mlx5-0");
  EXPECT_EQ(Paths(spec["devices"][0]),
            (std::vector<std::string>{"/dev/infiniband/uverbs0", "/dev/infiniband/umad0",
                                      "/dev/infiniband/issm0"}));
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["hostPath"],
            "/host/dev/infiniband/uverbs0");
  EXPECT_EQ(Paths(spec["devices"][1]), (std::vector<std::string>{"/dev/infiniband/uverbs2"}));
  // rdma_cm once, spec-wide.
  ASSERT_EQ(spec["containerEdits"]["deviceNodes"].size(), 1u);
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"][0]["path"], "/dev/infiniband/rdma_cm");
}

TEST(ClaimCdiSpec, EnvListsEveryDeviceOfTheRequest) {
  node::AllocateOptions opts;
  opts.nccl_env = true;
  opts.ucx_env = true;
  opts.extra_env = {{"UCX_TLS", "rc"}};
  std::vector<ClaimDevice> devs = {{"nics", "mlx5-0", dp::testdev::Ib("mlx5_0", 0), opts},
                                   {"nics", "mlx5-1", dp::testdev::Ib("mlx5_1", 1), opts},
                                   {"other", "mlx5-2", dp::testdev::Roce("mlx5_2", 2, "eth0"), {}}};
  json spec = json::parse(BuildClaimCdiSpec("d", "u", devs, "/dev"));
  json want = json::array({"NCCL_IB_HCA==mlx5_0,mlx5_1", "UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1", "UCX_TLS=rc"});
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["env"], want);
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["env"], want);
  EXPECT_FALSE(spec["devices"][2]["containerEdits"].contains("env"));
}

}  // namespace
}  // namespace rdmak8s::dra
