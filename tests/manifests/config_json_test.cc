// Every config.json under manifests/ is a configuration the real device plugin accepts
// (dp::LoadConfigFile, the parser --config goes through), and the resource and environment names
// the manifests' networks and examples rely on are the ones the plugin derives from it.
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device-plugin/config/config.h"

#include "support/test_dirs.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;

const fs::path kManifests = fs::path(RDMAK8S_SOURCE_DIR) / "manifests";

std::vector<fs::path> ConfigFiles() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(kManifests)) {
    if (e.is_regular_file() && e.path().filename() == "config.json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> Resources(const fs::path& rel) {
  auto cfg = LoadConfigFile((kManifests / rel / "config.json").string());
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  std::set<std::string> out;
  if (cfg.ok()) {
    for (const auto& pool : cfg->pools) out.insert(ResourceName(*cfg, pool));
  }
  return out;
}

TEST(ManifestsConfigJson, EveryConfigInManifestsIsAcceptedByTheDevicePlugin) {
  auto files = ConfigFiles();
  // base and the five overlays with their own config (cdi, verbs-health reuse roce-shared;
  // dra-split has the PFs' pool).
  EXPECT_EQ(files.size(), 6u);
  for (const auto& f : files) {
    auto cfg = LoadConfigFile(f.string());
    EXPECT_TRUE(cfg.ok()) << f << ": " << cfg.status().ToString();
  }
}

TEST(ManifestsConfigJson, OverlaysAdvertiseTheResourcesTheirNetworksAndExamplesName) {
  EXPECT_EQ(Resources("base"), std::set<std::string>{"rdma/roce_shared"});
  EXPECT_EQ(Resources("overlays/roce-shared"), std::set<std::string>{"rdma/roce_shared"});
  EXPECT_EQ(Resources("overlays/exclusive-vf"),
            (std::set<std::string>{"rdma/roce_vf", "rdma/roce_sf"}));
  EXPECT_EQ(Resources("overlays/infiniband"), std::set<std::string>{"rdma/ib_shared"});
  EXPECT_EQ(Resources("overlays/iwarp"), std::set<std::string>{"rdma/iwarp"});
  EXPECT_EQ(Resources("overlays/dra-split"), std::set<std::string>{"rdma/roce_pf"});
}

TEST(ManifestsConfigJson, ExampleScriptsReadTheEnvironmentAllocateInjects) {
  // examples/perftest/perftest.yaml and examples/nccl-multi-nic/nccl-multi-nic.yaml.
  EXPECT_EQ(PoolEnvName("roce_shared"), "RDMAK8S_ROCE_SHARED_DEVICES");
  EXPECT_EQ(PoolEnvName("roce_vf"), "RDMAK8S_ROCE_VF_DEVICES");
  auto cfg = LoadConfigFile((kManifests / "overlays/exclusive-vf/config.json").string());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  bool nccl = false;
  for (const auto& pool : cfg->pools) nccl |= pool.name == "roce_vf" && pool.allocate.nccl_env;
  EXPECT_TRUE(nccl) << "the multi-NIC example prints NCCL_IB_HCA from Allocate";
}

}  // namespace
}  // namespace rdmak8s::dp
