#include "dra/api/resource_slice.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

SliceDevice Dev(const std::string& name) {
  SliceDevice d;
  d.name = name;
  d.attributes["transport"] = std::string("roce");
  d.attributes["resource.kubernetes.io/numaNode"] = int64_t{1};
  d.attributes["roceV2"] = true;
  return d;
}

ResourceSlice OneSlice() {
  ResourceSlice s;
  s.name = "node1-rdma.rdmak8s.io-0";
  s.driver = "rdma.rdmak8s.io";
  s.node_name = s.pool_name = "node1";
  s.pool_generation = 3;
  SliceDevice d = Dev("mlx5-0");
  d.capacity["shares"] = {"8", "1"};
  d.allow_multiple_allocations = true;
  d.taints.push_back({"rdma.rdmak8s.io/unhealthy", "portdown", "NoSchedule"});
  s.devices.push_back(d);
  return s;
}

TEST(ResourceSliceTest, V1PutsDeviceFieldsOnTheDevice) {
  json j = EncodeResourceSlice(OneSlice(), ResourceApiVersion::kV1);
  EXPECT_EQ(j["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(j["kind"], "ResourceSlice");
  EXPECT_EQ(j["spec"]["pool"], (json{{"name", "node1"}, {"generation", 3}, {"resourceSliceCount", 1}}));
  const json& d = j["spec"]["devices"][0];
  EXPECT_FALSE(d.contains("basic"));
  EXPECT_EQ(d["attributes"]["transport"], (json{{"string", "roce"}}));
  EXPECT_EQ(d["attributes"]["resource.kubernetes.io/numaNode"], (json{{"int", 1}}));
  EXPECT_EQ(d["attributes"]["roceV2"], (json{{"bool", true}}));
  EXPECT_EQ(d["capacity"]["shares"]["value"], "8");
  EXPECT_EQ(d["capacity"]["shares"]["requestPolicy"]["default"], "1");
  EXPECT_EQ(d["allowMultipleAllocations"], true);
  EXPECT_EQ(d["taints"][0]["effect"], "NoSchedule");
}

TEST(ResourceSliceTest, V1beta1WrapsDeviceFieldsInBasic) {
  json j = EncodeResourceSlice(OneSlice(), ResourceApiVersion::kV1beta1);
  EXPECT_EQ(j["apiVersion"], "resource.k8s.io/v1beta1");
  const json& d = j["spec"]["devices"][0];
  EXPECT_EQ(d["name"], "mlx5-0");
  EXPECT_FALSE(d.contains("attributes"));
  EXPECT_EQ(d["basic"]["attributes"]["transport"], (json{{"string", "roce"}}));
  EXPECT_EQ(d["basic"]["taints"][0]["key"], "rdma.rdmak8s.io/unhealthy");
}

TEST(ResourceSliceTest, DecodeReadsBackWhatEncodeWroteInBothVersions) {
  ResourceSlice s = OneSlice();
  s.owner_node_uid = "node-uid";
  for (auto v : {ResourceApiVersion::kV1, ResourceApiVersion::kV1beta1}) {
    auto back = DecodeResourceSlice(EncodeResourceSlice(s, v), v);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->devices, s.devices);
    EXPECT_EQ(back->pool_generation, 3);
    EXPECT_EQ(back->owner_node_uid, "node-uid");
  }
}

// KEP-5007 fields: on the device in v1, under basic in v1beta1, and read back.
TEST(ResourceSliceTest, BindingConditionsAndBindsToNodeGoOutAndComeBackInBothVersions) {
  ResourceSlice s = OneSlice();
  s.devices[0].taints.clear();
  s.devices[0].binding_conditions = {"PortActive"};
  s.devices[0].binding_failure_conditions = {"PortActivationFailed"};
  s.devices[0].binds_to_node = true;
  const json v1 = EncodeResourceSlice(s, ResourceApiVersion::kV1)["spec"]["devices"][0];
  EXPECT_EQ(v1["bindingConditions"], json::array({"PortActive"}));
  EXPECT_EQ(v1["bindingFailureConditions"], json::array({"PortActivationFailed"}));
  EXPECT_EQ(v1["bindsToNode"], true);
  const json beta = EncodeResourceSlice(s, ResourceApiVersion::kV1beta1)["spec"]["devices"][0];
  EXPECT_EQ(beta["basic"]["bindingConditions"], json::array({"PortActive"}));
  for (auto v : {ResourceApiVersion::kV1, ResourceApiVersion::kV1beta1}) {
    auto back = DecodeResourceSlice(EncodeResourceSlice(s, v), v);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->devices, s.devices);
  }
  // A device without them sends none of the three.
  const json plain = EncodeResourceSlice(OneSlice(), ResourceApiVersion::kV1)["spec"]["devices"][0];
  EXPECT_FALSE(plain.contains("bindingConditions") || plain.contains("bindingFailureConditions") ||
               plain.contains("bindsToNode"));
}

TEST(ResourceSliceTest, DecodeRefusesABindingConditionThatIsNotAString) {
  json j = EncodeResourceSlice(OneSlice(), ResourceApiVersion::kV1);
  j["spec"]["devices"][0]["bindingConditions"] = json::array({7});
  auto r = DecodeResourceSlice(j, ResourceApiVersion::kV1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bindingConditions[0]"), std::string::npos) << r.status().message();
}

TEST(ResourceSliceTest, DecodeNamesWhatIsMissing) {
  auto r = DecodeResourceSlice(json{{"metadata", {{"name", "x"}}}}, ResourceApiVersion::kV1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("spec"), std::string::npos) << r.status().message();
}

TEST(ResourceSliceTest, SplitPoolKeepsEachSliceWithinTheApiLimit) {
  std::vector<SliceDevice> devs;
  for (int i = 0; i < 300; ++i) devs.push_back(Dev("d" + std::to_string(i)));
  auto slices = SplitPool(devs, "n-drv", "drv", "n", 7);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[0].devices.size(), 128u);
  EXPECT_EQ(slices[2].devices.size(), 300u - 256u);
  for (const auto& s : slices) {
    EXPECT_EQ(s.pool_slice_count, 3);
    EXPECT_EQ(s.pool_generation, 7);
    EXPECT_EQ(s.pool_name, "n");
  }
  EXPECT_EQ(slices[1].name, "n-drv-1");
}

TEST(ResourceSliceTest, SplitPoolHoldsAtMost64DevicesWhenAnyIsTainted) {
  std::vector<SliceDevice> devs;
  for (int i = 0; i < 100; ++i) devs.push_back(Dev("d" + std::to_string(i)));
  devs[5].taints.push_back({"k", "", "NoSchedule"});
  auto slices = SplitPool(devs, "p", "drv", "n", 1);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].devices.size(), 64u);
}

TEST(ResourceSliceTest, AnEmptyPoolIsOneEmptySlice) {
  auto slices = SplitPool({}, "p", "drv", "n", 1);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_TRUE(slices[0].devices.empty());
}

TEST(ResourceSliceTest, QualifiedNamesFollowTheApiRule) {
  EXPECT_TRUE(IsValidQualifiedName("transport"));
  EXPECT_TRUE(IsValidQualifiedName("resource.kubernetes.io/pcieRoot"));
  EXPECT_FALSE(IsValidQualifiedName("9lives"));
  EXPECT_FALSE(IsValidQualifiedName("a-b"));
  EXPECT_FALSE(IsValidQualifiedName(std::string(33, 'a')));
  EXPECT_FALSE(IsValidQualifiedName("Bad_Domain/x"));
  EXPECT_TRUE(IsDnsLabel("mlx5-0"));
  EXPECT_FALSE(IsDnsLabel("mlx5_0"));
  EXPECT_FALSE(IsDnsLabel("-a"));
}

}  // namespace
}  // namespace rdmak8s::dra
