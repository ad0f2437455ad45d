#include "device-plugin/pools/pool_cdi_spec.h"
#include "node/cdi_spec.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/planted_files.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dp {
namespace {

using namespace testdev;
using nlohmann::json;

TEST(PoolCdiSpecTest, OneCdiDevicePerRdmaDeviceAndRdmaCmSpecWide) {
  PoolState s;
  s.resource = "rdma/p";
  s.cdi_kind = "rdma/p";
  s.dev_root = "/host/dev";
  s.pool.mode = PoolMode::kShared;
  s.pool.capacity = 3;
  s.devices["mlx5_0"] = {Ib("mlx5_0", 0), {true, ""}};
  s.devices["irdma0"] = {Iwarp("irdma0", 1, "ens785f0"), {true, ""}};
  FillIds(s);
  json spec = json::parse(BuildCdiSpec(s));
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  EXPECT_EQ(spec["kind"], "rdma/p");
  ASSERT_EQ(spec["devices"].size(), 2u);
  EXPECT_EQ(spec["devices"][0]["name"], "irdma0");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"],
            json::parse(R"([{"path": "/dev/infiniband/uverbs1",
                             "hostPath": "/host/dev/infiniband/uverbs1", "permissions": "rw"}])"));
  EXPECT_EQ(spec["devices"][1]["containerEdits"]["deviceNodes"].size(), 2u);  // uverbs0, umad0
  EXPECT_EQ(spec["containerEdits"]["deviceNodes"],
            json::parse(R"([{"path": "/dev/infiniband/rdma_cm",
                             "hostPath": "/host/dev/infiniband/rdma_cm", "permissions": "rw"}])"));
}

TEST(PoolCdiSpecTest, PathReplacesSlash) {
  EXPECT_EQ(CdiSpecPath("/var/run/cdi", "rdma.example.com/hca"),
            "/var/run/cdi/rdmak8s-rdma.example.com-hca.json");
}

}  // namespace
}  // namespace rdmak8s::dp
