// overlays/dra-split's two selections on a real device model: on a node with a RoCE PF and its
// VFs (fixture mlx5_roce_sriov), no device is taken by both the device plugin's pools
// (config.json) and the DRA driver (dra-devices.json, its --devices file), and every RoCE device
// is taken by one of them. Both files go through the agents' own parsers.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device-plugin/config/config.h"
#include "dra/device_filter.h"
#include "node/selectors.h"
#include "rdmak8s/discovery/discovery.h"
#include "support/test_dirs.h"

namespace rdmak8s {
namespace {

const std::string kOverlay = std::string(RDMAK8S_SOURCE_DIR) + "/manifests/overlays/dra-split";

TEST(DraSplitOverlayTest, EveryRoceDeviceGoesToExactlyOneAgent) {
  auto config = dp::LoadConfigFile(kOverlay + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(dra::DeviceFilter::Load(kOverlay + "/dra-devices.json").ok());
  std::ifstream in(kOverlay + "/dra-devices.json");
  std::stringstream text;
  text << in.rdbuf();
  auto driver = node::ParseSelectors(nlohmann::json::parse(text.str())["selectors"], "$.selectors");
  ASSERT_TRUE(driver.ok()) << driver.status().ToString();

  SysfsDiscovery discovery({std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_roce_sriov", nullptr});
  auto found = discovery.DiscoverAll();
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  int pfs = 0, vfs = 0;
  for (const RdmaDevice& dev : found->devices) {
    SCOPED_TRACE(dev.name);
    int takers = node::SelectorsMatch(*driver, dev, found->devices) ? 1 : 0;
    for (const dp::PoolConfig& pool : config->pools) {
      if (node::SelectorsMatch(pool.selectors, dev, found->devices)) ++takers;
    }
    EXPECT_EQ(takers, 1) << "taken by " << takers << " of the agents' selections";
    (dev.parent.pci && dev.parent.pci->is_vf ? vfs : pfs)++;
  }
  EXPECT_GE(pfs, 1);
  EXPECT_GE(vfs, 1);
}

}  // namespace
}  // namespace rdmak8s
