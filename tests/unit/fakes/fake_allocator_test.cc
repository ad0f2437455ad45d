// The fake API server's allocator must allocate as kube-scheduler does: taints, tolerations,
// firstAvailable, devices of other claims, binding conditions and their failure.
#include "fakes/fake_allocator.h"

#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_api_server.h"
#include "support/test_dirs.h"

namespace rdmak8s::testing {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kNow[] = "2026-12-05T03:00:00Z";

json RoceDevice(const std::string& name) {
  return {{"name", name}, {"attributes", {{"transport", {{"string", "roce"}}}, {"rdmaDevice", {{"string", "rxe_" + name}}}}}};
}
json Taint(const std::string& effect, const std::string& value = "port-down") {
  return {{"key", "rdma.rdmak8s.io/unhealthy"}, {"value", value}, {"effect", effect}};
}
json Slice(const std::vector<json>& devices, const std::string& node = "node1") {
  return {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-slice"}}},
          {"spec", {{"driver", kDriver}, {"nodeName", node},
                    {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
                    {"devices", json(devices)}}}};
}
json Exactly(const std::string& class_name, json tolerations = nullptr) {
  json r = {{"name", "nic"}, {"exactly", {{"deviceClassName", class_name}}}};
  if (!tolerations.is_null()) r["exactly"]["tolerations"] = tolerations;
  return r;
}
json Claim(const std::string& name, const json& request) {
  return {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
          {"metadata", {{"namespace", "default"}, {"name", name}, {"uid", "uid-" + name}}},
          {"spec", {{"devices", {{"requests", json::array({request})}}}}}};
}

class FakeAllocatorTest : public ::testing::Test {
 protected:
  void Run() { changed_ = allocator_.Run(slices_, claims_, kNow); }
  void AddSlice(const json& slice) { slices_[slice["metadata"]["name"]] = slice; }
  json& ClaimOf(const std::string& name) { return claims_["default/" + name]; }
  // The allocated device's name of the claim's first result, "" when not allocated.
  std::string DeviceOf(const std::string& name) {
    const json& c = ClaimOf(name);
    if (!c.contains("status") || !c["status"].contains("allocation")) return "";
    return c["status"]["allocation"]["devices"]["results"][0].value("device", "");
  }
  std::string Annotation(const std::string& name, const char* key) {
    return ClaimOf(name)["metadata"].value("annotations", json::object()).value(key, "");
  }
  // The driver's status.devices entry for `device` with `conditions` ({type, status}).
  void SetConditions(const std::string& claim, const std::string& device,
                     std::vector<std::pair<std::string, std::string>> conditions) {
    json entry = {{"driver", kDriver}, {"pool", "node1"}, {"device", device}, {"conditions", json::array()}};
    for (const auto& [type, status] : conditions) {
      entry["conditions"].push_back({{"type", type}, {"status", status}, {"reason", "Test"},
                                     {"lastTransitionTime", kNow}, {"message", ""}});
    }
    ClaimOf(claim)["status"]["devices"] = json::array({entry});
  }

  FakeAllocator allocator_;
  std::map<std::string, json> slices_;
  std::map<std::string, json> claims_;
  std::vector<std::string> changed_;
};

TEST_F(FakeAllocatorTest, AClaimWithoutAllocationGetsAFreeDeviceOfItsClass) {
  AddSlice(Slice({RoceDevice("dev-a")}));
  ClaimOf("c") = Claim("c", Exactly("rdma-roce"));
  Run();
  EXPECT_EQ(DeviceOf("c"), "dev-a");
  EXPECT_EQ(Annotation("c", kBindingAnnotation), "bound");
  EXPECT_THAT(changed_, ::testing::ElementsAre("default/c"));
  const json& a = ClaimOf("c")["status"]["allocation"];
  EXPECT_EQ(a["devices"]["results"][0], (json{{"request", "nic"}, {"driver", kDriver}, {"pool", "node1"}, {"device", "dev-a"}}));
  EXPECT_EQ(a["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0], "node1");
  Run();  // nothing changes a second time
  EXPECT_TRUE(changed_.empty());
}

TEST_F(FakeAllocatorTest, ADeviceOfAnotherClassOrAnotherClaimIsNotTaken) {
  json ib = RoceDevice("dev-ib");
  ib["attributes"]["transport"]["string"] = "ib";
  AddSlice(Slice({ib, RoceDevice("dev-a")}));
  ClaimOf("first") = Claim("first", Exactly("rdma-roce"));
  ClaimOf("second") = Claim("second", Exactly("rdma-roce"));
  Run();
  EXPECT_EQ(DeviceOf("first"), "dev-a");
  EXPECT_EQ(DeviceOf("second"), "");
  EXPECT_EQ(Annotation("second", kBindingAnnotation), "pending");
}

TEST_F(FakeAllocatorTest, ATaintedDeviceIsSkipped) {
  json down = RoceDevice("dev-a");
  down["taints"] = json::array({Taint("NoSchedule")});
  AddSlice(Slice({down, RoceDevice("dev-b")}));
  ClaimOf("c") = Claim("c", Exactly("rdma-roce"));
  Run();
  EXPECT_EQ(DeviceOf("c"), "dev-b");
}

TEST_F(FakeAllocatorTest, ANoExecuteTaintedDeviceAloneLeavesTheClaimPendingNamingTheTaint) {
  json down = RoceDevice("dev-a");
  down["taints"] = json::array({Taint("NoExecute")});
  AddSlice(Slice({down}));
  ClaimOf("c") = Claim("c", Exactly("rdma-roce"));
  Run();
  EXPECT_EQ(DeviceOf("c"), "");
  EXPECT_EQ(Annotation("c", kBindingAnnotation), "pending");
  EXPECT_THAT(Annotation("c", kBindingReasonAnnotation),
              ::testing::HasSubstr("taint rdma.rdmak8s.io/unhealthy=port-down:NoExecute"));
  // The taint goes (the port came back): the pending claim is allocated on the next pass.
  slices_["node1-slice"]["spec"]["devices"][0].erase("taints");
  Run();
  EXPECT_EQ(DeviceOf("c"), "dev-a");
}

TEST_F(FakeAllocatorTest, ATolerationTakesTheTaintedDevice) {
  json down = RoceDevice("dev-a");
  down["taints"] = json::array({Taint("NoSchedule")});
  AddSlice(Slice({down}));
  const json by_key = json::array({json{{"key", "rdma.rdmak8s.io/unhealthy"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  const json by_value = json::array({json{{"key", "rdma.rdmak8s.io/unhealthy"}, {"value", "port-down"}}});  // Equal
  const json everything = json::array({json{{"operator", "Exists"}}});
  const json other_value = json::array({json{{"key", "rdma.rdmak8s.io/unhealthy"}, {"operator", "Equal"}, {"value", "gid-missing"}}});
  const json other_effect = json::array({json{{"key", "rdma.rdmak8s.io/unhealthy"}, {"operator", "Exists"}, {"effect", "NoExecute"}}});
  for (const auto& [tolerations, tolerated] : std::vector<std::pair<json, bool>>{
           {by_key, true}, {by_value, true}, {everything, true}, {other_value, false}, {other_effect, false}}) {
    claims_.clear();
    ClaimOf("c") = Claim("c", Exactly("rdma-roce", tolerations));
    Run();
    EXPECT_EQ(DeviceOf("c"), tolerated ? "dev-a" : "") << tolerations.dump();
    if (tolerated) {
      EXPECT_EQ(ClaimOf("c")["status"]["allocation"]["devices"]["results"][0]["tolerations"], tolerations);
    }
  }
}

TEST_F(FakeAllocatorTest, ANoneTaintIsIgnored) {
  json degraded = RoceDevice("dev-a");
  degraded["taints"] = json::array({Taint("None", "degraded")});
  AddSlice(Slice({degraded}));
  ClaimOf("c") = Claim("c", Exactly("rdma-roce"));
  Run();
  EXPECT_EQ(DeviceOf("c"), "dev-a");
}

TEST_F(FakeAllocatorTest, FirstAvailableFallsThroughToTheSubrequestThatCanBeSatisfied) {
  AddSlice(Slice({RoceDevice("dev-a")}));
  ClaimOf("c") = Claim("c", {{"name", "nic"},
                             {"firstAvailable", json::array({json{{"name", "ib"}, {"deviceClassName", "rdma-ib"}},
                                                             json{{"name", "rxe"}, {"deviceClassName", "rdma-roce"}}})}});
  Run();
  ASSERT_EQ(DeviceOf("c"), "dev-a");
  EXPECT_EQ(ClaimOf("c")["status"]["allocation"]["devices"]["results"][0]["request"], "nic/rxe");
}

TEST_F(FakeAllocatorTest, WhatItCannotEvaluateLeavesTheClaimPendingSayingWhy) {
  AddSlice(Slice({RoceDevice("dev-a")}));
  json request = Exactly("rdma-roce");
  request["exactly"]["selectors"] = json::array({json{{"cel", {{"expression", "true"}}}}});
  ClaimOf("c") = Claim("c", request);
  Run();
  EXPECT_EQ(DeviceOf("c"), "");
  EXPECT_THAT(Annotation("c", kBindingReasonAnnotation), ::testing::HasSubstr("selectors (CEL)"));
}

json BindingDevice(const std::string& name) {
  json d = RoceDevice(name);
  d["bindingConditions"] = json::array({"PortActive"});
  d["bindingFailureConditions"] = json::array({"PortActivationFailed"});
  return d;
}

TEST_F(FakeAllocatorTest, BindingWaitsForEveryBindingConditionToBeTrue) {
  AddSlice(Slice({BindingDevice("dev-a")}));
  ClaimOf("c") = Claim("c", Exactly("rdma-roce"));
  Run();
  ASSERT_EQ(DeviceOf("c"), "dev-a");
  const json& a = ClaimOf("c")["status"]["allocation"];
  EXPECT_EQ(a["devices"]["results"][0]["bindingConditions"], json::array({"PortActive"}));
  EXPECT_EQ(a["devices"]["results"][0]["bindingFailureConditions"], json::array({"PortActivationFailed"}));
  EXPECT_EQ(a.value("allocationTimestamp", ""), kNow);
  EXPECT_EQ(Annotation("c", kBindingAnnotation), "waiting");
  EXPECT_THAT(Annotation("c", kBindingReasonAnnotation), ::testing::HasSubstr("needs PortActive=True"));
  SetConditions("c", "dev-a", {{"PortActive", "False"}});
  Run();
  EXPECT_EQ(Annotation("c", kBindingAnnotation), "waiting");
  SetConditions("c", "dev-a", {{"PortActive", "True"}});
  Run();
  EXPECT_EQ(Annotation("c", kBindingAnnotation), "bound");
  EXPECT_EQ(DeviceOf("c"), "dev-a");
}

TEST_F(FakeAllocatorTest, AFailureConditionMovesTheClaimToAnotherDevice) {
  AddSlice(Slice({BindingDevice("dev-a"), BindingDevice("dev-b")}));
  ClaimOf("c") = Claim("c", Exactly("rdma-roce"));
  Run();
  ASSERT_EQ(DeviceOf("c"), "dev-a");
  SetConditions("c", "dev-a", {{"PortActive", "False"}, {"PortActivationFailed", "True"}});
  Run();
  EXPECT_EQ(DeviceOf("c"), "dev-b");
  EXPECT_EQ(Annotation("c", kAvoidedAnnotation), "rdma.rdmak8s.io/node1/dev-a");
  EXPECT_EQ(Annotation("c", kBindingAnnotation), "waiting");
  EXPECT_FALSE(ClaimOf("c")["status"].contains("devices"));  // dropped with the allocation
  // dev-b fails too: nothing is left, the claim waits unallocated.
  SetConditions("c", "dev-b", {{"PortActivationFailed", "True"}});
  Run();
  EXPECT_EQ(DeviceOf("c"), "");
  EXPECT_EQ(Annotation("c", kBindingAnnotation), "pending");
  EXPECT_THAT(Annotation("c", kBindingReasonAnnotation), ::testing::HasSubstr("binding failed before"));
}

// The hook: the FakeApiServer runs the allocator when claims and slices change.
TEST(FakeApiServerAllocation, AStoredClaimIsAllocatedAndADeletedOneFreesItsDevice) {
  FakeApiServer server;
  json down = RoceDevice("dev-a");
  down["taints"] = json::array({Taint("NoSchedule")});
  server.PutSliceV1(Slice({down, RoceDevice("dev-b")}));
  server.AddClaim(Claim("first", Exactly("rdma-roce")));
  server.AddClaim(Claim("second", Exactly("rdma-roce")));
  const json first = server.Claim("default", "first");
  ASSERT_TRUE(first["status"].contains("allocation")) << first.dump();
  EXPECT_EQ(first["status"]["allocation"]["devices"]["results"][0]["device"], "dev-b");
  EXPECT_FALSE(server.Claim("default", "second")["status"].contains("allocation"));
  EXPECT_TRUE(server.DeleteClaim("default", "first"));
  EXPECT_EQ(server.Claim("default", "second")["status"]["allocation"]["devices"]["results"][0]["device"], "dev-b");
}

// The fake cannot run CEL: its class table must say what the shipped classes' CEL says.
TEST(ShippedDeviceClasses, TheTableReadsEachShippedClassAsItsCelDoes) {
  std::ifstream in(std::string(RDMAK8S_SOURCE_DIR) + "/manifests/components/dra-driver/device-classes.yaml");
  ASSERT_TRUE(in) << "device-classes.yaml";
  std::stringstream text;
  text << in.rdbuf();
  std::map<std::string, FakeDeviceClass> read;
  std::string doc;
  std::stringstream docs(text.str() + "\n---\n");
  std::string line;
  const std::regex name_re(R"(\n  name: (\S+))");
  const std::regex driver_re(R"re(device\.driver == "([^"]+)")re");
  const std::regex attr_re(R"re(device\.attributes\["([^"]+)"\]\.(\w+) == "([^"]*)")re");
  while (std::getline(docs, line)) {
    if (line != "---") {
      doc += line + "\n";
      continue;
    }
    std::smatch name, driver, attr;
    if (std::regex_search(doc, name, name_re)) {
      ASSERT_TRUE(std::regex_search(doc, driver, driver_re)) << doc;
      FakeDeviceClass c{driver[1], "", ""};
      if (std::regex_search(doc, attr, attr_re)) {
        ASSERT_EQ(attr[1], c.driver) << "an attribute of another domain: " << doc;
        c.attribute = attr[2];
        c.value = attr[3];
      }
      read[name[1]] = c;
    }
    doc.clear();
  }
  ASSERT_EQ(read.size(), ShippedDeviceClasses().size());
  for (const auto& [name, c] : ShippedDeviceClasses()) {
    ASSERT_TRUE(read.count(name)) << name;
    EXPECT_EQ(read[name].driver, c.driver) << name;
    EXPECT_EQ(read[name].attribute, c.attribute) << name;
    EXPECT_EQ(read[name].value, c.value) << name;
  }
}

}  // namespace
}  // namespace rdmak8s::testing
