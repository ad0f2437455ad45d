// DeviceFilter (--devices): which of the node's RDMA devices the DRA driver takes, over the
// devices discovery finds in a kernel-shaped sysfs tree (a PF with VFs and an SF).
#include "dra/device_filter.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "rdmak8s/discovery/discovery.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::dra {
namespace {

std::map<std::string, node::TrackedDevice> NodeDevices() {
  SysfsDiscovery discovery(DiscoveryOptions{std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_roce_sriov", nullptr});
  auto all = discovery.DiscoverAll();
  EXPECT_TRUE(all.ok()) << all.status().ToString();
  std::map<std::string, node::TrackedDevice> out;
  if (!all.ok()) return out;
  for (const auto& d : all->devices) out[d.name] = node::TrackedDevice{d, {true, ""}};
  return out;
}

std::vector<std::string> Names(const std::map<std::string, node::TrackedDevice>& m) {
  std::vector<std::string> v;
  for (const auto& [name, t] : m) v.push_back(name);
  return v;
}

TEST(DeviceFilterTest, WithoutAFileEveryDeviceIsTaken) {
  auto node = NodeDevices();
  ASSERT_GE(node.size(), 3u);
  DeviceFilter all;
  EXPECT_TRUE(all.takes_all());
  EXPECT_EQ(Names(all.Apply(node)), Names(node));
}

TEST(DeviceFilterTest, SelectorsTakeOnlyTheMatchingDevices) {
  auto node = NodeDevices();
  auto vfs = DeviceFilter::Parse(R"({"selectors": {"isVF": true}})");
  ASSERT_TRUE(vfs.ok()) << vfs.status().ToString();
  auto taken = vfs->Apply(node);
  ASSERT_FALSE(taken.empty());
  for (const auto& [name, t] : taken) {
    ASSERT_TRUE(t.dev.parent.pci.has_value()) << name;
    EXPECT_TRUE(t.dev.parent.pci->is_vf) << name << " is not a VF";
  }
  EXPECT_EQ(taken.count("mlx5_0"), 0u);  // the PF stays for the device plugin

  auto one = DeviceFilter::Parse(R"({"selectors": {"rdmaDevices": ["mlx5_0"], "transports": ["roce"]}})");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(Names(one->Apply(node)), std::vector<std::string>{"mlx5_0"});

  auto none = DeviceFilter::Parse(R"({"selectors": {"transports": ["ib"]}})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->Apply(node).empty());
}

TEST(DeviceFilterTest, BadFilesAreRefusedNamingWhatIsWrong) {
  struct Case {
    const char* text;
    const char* names;
  } cases[] = {
      {"{", "$: not JSON: "},
      {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
       "$: nested deeper than 128 levels"},
      {"[]", "$: not an object (array)"},
      {R"({"selector": {}})", "$.selector: unknown field (allowed: selectors)"},
      {R"({})", "$.selectors: missing"},
      {R"({"selectors": {"transport": ["roce"]}})", "$.selectors"},
      {R"({"selectors": {"transports": ["rocev2"]}})", "$.selectors.transports[0]"},
      {R"({"selectors": {"vendors": ["15b"]}})", "$.selectors.vendors[0]"},
  };
  for (const auto& c : cases) {
    auto f = DeviceFilter::Parse(c.text);
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(f.status().message().find(c.names), std::string::npos)
        << c.text << " -> " << f.status().message();
  }
}

TEST(DeviceFilterTest, LoadNamesTheFileItCouldNotReadOrParse) {
  testing::TempDir tmp;
  auto missing = DeviceFilter::Load(tmp.path() + "/none.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--devices " + tmp.path() + "/none.json"), std::string::npos)
      << missing.status().message();
  std::ofstream(tmp.path() + "/bad.json") << R"({"selectors": {"isVF": "yes"}})";
  auto bad = DeviceFilter::Load(tmp.path() + "/bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("$.selectors.isVF"), std::string::npos) << bad.status().message();
  std::ofstream(tmp.path() + "/ok.json") << R"({"selectors": {"pfNames": ["ens1f0np0"]}})";
  auto ok = DeviceFilter::Load(tmp.path() + "/ok.json");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_FALSE(ok->takes_all());
}

}  // namespace
}  // namespace rdmak8s::dra
