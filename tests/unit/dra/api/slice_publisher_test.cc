#include "dra/api/slice_publisher.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_api_server.h"
#include "rdmak8s/discovery/discovery.h"
#include "support/log_capture.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;
using rdmak8s::testing::FakeApiServer;
using rdmak8s::testing::FakeApiServerOptions;

constexpr char kDriver[] = "rdma.rdmak8s.io";

std::vector<DeviceInput> Fixture(const std::string& c) {
  std::string root = std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + c;
  SysfsDiscovery discovery({root, nullptr});
  auto result = discovery.DiscoverAll();
  EXPECT_TRUE(result.ok());
  return DeviceInputsOf(result->devices);
}

// n synthetic PCI functions (copies of the fixture's PF under other names and addresses).
std::vector<DeviceInput> Many(int n) {
  DeviceInput pf = Fixture("mlx5_roce_sriov")[0];
  std::vector<DeviceInput> out;
  for (int i = 0; i < n; ++i) {
    DeviceInput d = pf;
    d.device.name = "mlx5_" + std::to_string(1000 + i);
    out.push_back(d);
  }
  return out;
}

class SlicePublisherTest : public ::testing::Test {
 protected:
  void Start(FakeApiServerOptions options = {}) {
    server_ = std::make_unique<FakeApiServer>(std::move(options));
    ASSERT_TRUE(server_->Start(dir_.path() + "/api.sock"));
    server_->AddNode("node1", "node-uid-1");
    KubeConfig c;
    c.server = server_->url();
    c.unix_socket = dir_.path() + "/api.sock";
    RetryPolicy retry;
    retry.sleep = [](std::chrono::milliseconds) {};
    client_ = std::move(*CurlKubeClient::Create(c, retry));
  }
  SlicePublisher Publisher(int shares = 0) {
    PublisherOptions o;
    o.driver = kDriver;
    o.node_name = "node1";
    o.shares = shares;
    o.list_page_size = 2;
    return SlicePublisher(client_.get(), o);
  }
  static std::vector<std::string> DeviceNames(const std::vector<json>& slices) {
    std::vector<std::string> names;
    for (const auto& s : slices) for (const auto& d : s["spec"]["devices"]) names.push_back(d["name"]);
    return names;
  }

  rdmak8s::testing::TempDir dir_;
  std::unique_ptr<FakeApiServer> server_;
  // POSTs a one-device slice of node1 with `device` as written; the answer's status and body
  // (status 0 when the request failed).
  std::pair<long, std::string> PostOneDeviceSlice(const json& device) {
    json slice = {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"},
                  {"metadata", {{"name", "s"}}},
                  {"spec", {{"driver", kDriver}, {"nodeName", "node1"},
                            {"pool", {{"name", "node1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                            {"devices", json::array({device})}}}};
    auto r = client_->Send({"POST", "/apis/resource.k8s.io/v1/resourceslices", slice.dump()});
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::make_pair(r->status, r->body) : std::make_pair(0L, std::string());
  }

  std::unique_ptr<CurlKubeClient> client_;
};

TEST_F(SlicePublisherTest, PublishesTheFixtureAsOneSliceOwnedByTheNode) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Fixture("mlx5_roce_sriov")).ok());
  auto slices = server_->Slices();
  ASSERT_EQ(slices.size(), 1u);
  const json& s = slices[0];
  EXPECT_EQ(s["metadata"]["name"], "node1-rdma.rdmak8s.io-0");
  EXPECT_EQ(s["metadata"]["ownerReferences"][0]["uid"], "node-uid-1");
  EXPECT_EQ(s["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_EQ(s["spec"]["driver"], kDriver);
  EXPECT_EQ(s["spec"]["nodeName"], "node1");
  EXPECT_EQ(s["spec"]["pool"], (json{{"name", "node1"}, {"generation", 1}, {"resourceSliceCount", 1}}));
  EXPECT_EQ(DeviceNames(slices), (std::vector<std::string>{"mlx5-0", "mlx5-1", "mlx5-2", "mlx5-3"}));
  EXPECT_EQ(s["spec"]["devices"][0]["attributes"]["resource.kubernetes.io/pcieRoot"]["string"], "pci0000:5d");
  EXPECT_EQ(p.version(), ResourceApiVersion::kV1);
  EXPECT_EQ(p.RdmaDevOf("mlx5-3"), "mlx5_3");
}

TEST_F(SlicePublisherTest, WritesNothingWhenNothingChanged) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Fixture("mlx5_roce_sriov")).ok());
  const int writes = server_->CountRequests("POST") + server_->CountRequests("PUT");
  ASSERT_TRUE(p.Publish(Fixture("mlx5_roce_sriov")).ok());
  EXPECT_EQ(server_->CountRequests("POST") + server_->CountRequests("PUT"), writes);
}

TEST_F(SlicePublisherTest, AChangeBumpsThePoolGenerationAndUpdatesInPlace) {
  Start();
  auto p = Publisher();
  auto devices = Fixture("mlx5_ib_2port");
  ASSERT_TRUE(p.Publish(devices).ok());
  devices[0].device.ports[0].state = PortState::kDown;
  ASSERT_TRUE(p.Publish(devices).ok());
  auto slices = server_->Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(slices[0]["spec"]["devices"][0]["attributes"]["portState"]["string"], "DOWN");
  EXPECT_EQ(server_->CountRequests("PUT"), 1);
}

TEST_F(SlicePublisherTest, SplitsALargePoolAndDeletesSlicesItNoLongerNeeds) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Many(300)).ok());
  auto slices = server_->Slices();
  ASSERT_EQ(slices.size(), 3u);
  for (const auto& s : slices) EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], 3);
  EXPECT_EQ(DeviceNames(slices).size(), 300u);

  ASSERT_TRUE(p.Publish(Many(100)).ok());
  slices = server_->Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_EQ(slices[0]["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(p.stats().deletes, 2);
}

TEST_F(SlicePublisherTest, LeavesOtherNodesAndDriversAlone) {
  Start();
  server_->PutSliceV1(json::parse(R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "gpu-slice"},
    "spec": {"driver": "gpu.nvidia.com", "nodeName": "node1",
             "pool": {"name": "node1", "generation": 1, "resourceSliceCount": 1}, "devices": []}})"));
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Fixture("rxe_veth")).ok());
  ASSERT_TRUE(p.DeleteAll().ok());
  auto slices = server_->Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["metadata"]["name"], "gpu-slice");
}

TEST_F(SlicePublisherTest, FallsBackToV1beta1WhenTheServerHasNoV1) {
  FakeApiServerOptions o;
  o.serve_v1 = false;
  Start(o);
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Fixture("mlx5_roce_sriov")).ok());
  EXPECT_EQ(p.version(), ResourceApiVersion::kV1beta1);
  EXPECT_EQ(server_->CountRequests("POST /apis/resource.k8s.io/v1beta1/resourceslices"), 1);
  auto slices = server_->Slices("v1beta1");
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["devices"][0]["basic"]["attributes"]["transport"]["string"], "roce");
  // And reads back what it wrote: nothing to do the second time.
  ASSERT_TRUE(p.Publish(Fixture("mlx5_roce_sriov")).ok());
  EXPECT_EQ(server_->CountRequests("PUT"), 0);
}

TEST_F(SlicePublisherTest, NoResourceApiIsUnimplemented) {
  FakeApiServerOptions o;
  o.serve_v1 = o.serve_v1beta1 = false;
  Start(o);
  auto p = Publisher();
  Status s = p.Publish(Fixture("rxe_veth"));
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
}

TEST_F(SlicePublisherTest, RetriesAConflictWithTheCurrentResourceVersion) {
  Start();
  auto p = Publisher();
  auto devices = Fixture("mlx5_ib_2port");
  ASSERT_TRUE(p.Publish(devices).ok());
  server_->ConflictNextUpdates(2);
  devices[0].device.fw_ver = "20.40.1000";
  ASSERT_TRUE(p.Publish(devices).ok());
  EXPECT_EQ(p.stats().conflicts, 2);
  EXPECT_EQ(server_->Slices()[0]["spec"]["devices"][0]["attributes"]["firmware"]["string"], "20.40.1000");
}

TEST_F(SlicePublisherTest, RelistsFromTheStartWhenTheContinueTokenIsGone) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Many(300)).ok());  // three slices, listed two per page
  server_->ExpireNextContinues(1);
  ASSERT_TRUE(p.Publish(Many(300)).ok());
  EXPECT_EQ(p.stats().relists, 1);
  EXPECT_EQ(server_->CountRequests("PUT"), 0);  // after the relist, nothing had changed
}

TEST_F(SlicePublisherTest, AFailedPublishIsFinishedByTheNext) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Many(300)).ok());
  server_->FailNext(500, 5);  // as many as the client tries
  EXPECT_FALSE(p.Publish(Many(10)).ok());
  ASSERT_TRUE(p.Publish(Many(10)).ok());
  auto slices = server_->Slices();
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(DeviceNames(slices).size(), 10u);
}

TEST_F(SlicePublisherTest, WithoutDeviceTaintsUnhealthyDevicesAreWithdrawnAndThatIsSaidOnce) {
  FakeApiServerOptions o;
  o.device_taints = false;
  Start(o);
  auto p = Publisher();
  auto devices = Fixture("mlx5_roce_sriov");
  devices[0].healthy = false;
  devices[0].unhealthy_reason = "PortDown";
  testing::LogCapture log;
  ASSERT_TRUE(p.Publish(devices).ok());
  EXPECT_FALSE(p.features().device_taints);
  EXPECT_EQ(DeviceNames(server_->Slices()), (std::vector<std::string>{"mlx5-1", "mlx5-2", "mlx5-3"}));
  devices[1].healthy = false;
  devices[1].unhealthy_reason = "PortDown";
  ASSERT_TRUE(p.Publish(devices).ok());
  const std::string text = log.Text();
  const std::string said = "the API server dropped the device taints";
  ASSERT_NE(text.find(said), std::string::npos) << text;
  EXPECT_EQ(text.find(said, text.find(said) + 1), std::string::npos) << "said twice:\n" << text;
}

TEST_F(SlicePublisherTest, TheUnhealthyTaintsEffectIsTheOneConfiguredAndTheServerKeepsNone) {
  Start();
  PublisherOptions o;
  o.driver = kDriver;
  o.node_name = "node1";
  o.taint_effect = "None";
  SlicePublisher p(client_.get(), o);
  auto devices = Fixture("mlx5_roce_sriov");
  devices[0].healthy = false;
  devices[0].unhealthy_reason = "PortDown";
  ASSERT_TRUE(p.Publish(devices).ok());
  EXPECT_TRUE(p.features().device_taints);
  EXPECT_EQ(server_->Slices()[0]["spec"]["devices"][0]["taints"][0]["effect"], "None");
}

TEST_F(SlicePublisherTest, WithDeviceTaintsUnhealthyDevicesStayTainted) {
  Start();
  auto p = Publisher();
  auto devices = Fixture("mlx5_roce_sriov");
  devices[0].healthy = false;
  devices[0].unhealthy_reason = "PortDown";
  ASSERT_TRUE(p.Publish(devices).ok());
  auto slices = server_->Slices();
  EXPECT_EQ(slices[0]["spec"]["devices"][0]["taints"][0]["key"], "rdma.rdmak8s.io/unhealthy");
}

TEST_F(SlicePublisherTest, WithoutConsumableCapacitySharesAreNamedDevices) {
  FakeApiServerOptions o;
  o.consumable_capacity = false;
  Start(o);
  auto p = Publisher(/*shares=*/2);
  ASSERT_TRUE(p.Publish(Fixture("rxe_veth")).ok());
  EXPECT_FALSE(p.features().consumable_capacity);
  EXPECT_EQ(DeviceNames(server_->Slices()), (std::vector<std::string>{"rxe0-0", "rxe0-1"}));
  EXPECT_EQ(p.RdmaDevOf("rxe0-1"), "rxe0");
}

TEST_F(SlicePublisherTest, WithConsumableCapacityADeviceTakesSeveralAllocations) {
  Start();
  auto p = Publisher(/*shares=*/4);
  ASSERT_TRUE(p.Publish(Fixture("rxe_veth")).ok());
  auto d = server_->Slices()[0]["spec"]["devices"][0];
  EXPECT_EQ(d["allowMultipleAllocations"], true);
  EXPECT_EQ(d["capacity"]["shares"]["value"], "4");
}

TEST_F(SlicePublisherTest, AnUnknownNodeIsAnErrorNamingIt) {
  Start();
  PublisherOptions o;
  o.driver = kDriver;
  o.node_name = "ghost";
  SlicePublisher p(client_.get(), o);
  Status s = p.Publish(Fixture("rxe_veth"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/api/v1/nodes/ghost"), std::string::npos) << s.message();
}

TEST_F(SlicePublisherTest, DeleteAllRemovesEverySliceOfThePool) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Many(200)).ok());
  ASSERT_EQ(server_->Slices().size(), 2u);
  ASSERT_TRUE(p.DeleteAll().ok());
  EXPECT_TRUE(server_->Slices().empty());
  EXPECT_FALSE(p.RdmaDevOf("mlx5-1000"));
  EXPECT_TRUE(p.DeleteAll().ok());
}

TEST_F(SlicePublisherTest, MalformedListAnswersAreErrorsNamingThePath) {
  Start();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"items":[],"metadata":{"continue":7}})", "$.metadata.continue: not a string (number)"},
      {"[]", "$: not an object (array)"},
      {R"("str")", "$: not an object (string)"},
      {R"({"items":{}})", "$.items: not a list (object)"},
      {R"({"items":[{"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","generation":"1"}}}]})",
       "$.items[0].spec.pool.generation: not an int64 (string)"},
      {R"({"items":[{"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p"},"devices":[{"name":3}]}}]})",
       "$.items[0].spec.devices[0].name: not a string (number)"},
      {"not json", ": not JSON: "},
      // Issue 32 item 4: every answer goes through the one reader's nesting bound.
      {R"({"items":)" + std::string(200000, '[') + std::string(200000, ']') + "}",
       ": nested deeper than 128 levels (json_reader::kMaxDepth)"},
  };
  for (const auto& [body, want] : cases) {
    server_->AnswerNext("GET /apis/resource.k8s.io/v1/resourceslices", 200, body);
    auto p = Publisher();
    Status s = p.Publish(Fixture("rxe_veth"));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << body;
    EXPECT_NE(s.message().find(want), std::string::npos) << body << " -> " << s.message();
    EXPECT_NE(s.message().find("list ResourceSlices"), std::string::npos) << s.message();
  }
}

TEST_F(SlicePublisherTest, AMalformedNodeAnswerIsAnErrorNamingThePath) {
  Start();
  for (const char* body : {R"({"metadata":"x"})", R"({"metadata":{"uid":5}})", R"({"metadata":{}})", "[]"}) {
    server_->AnswerNext("GET /api/v1/nodes/node1", 200, body);
    auto p = Publisher();
    Status s = p.Publish(Fixture("rxe_veth"));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << body;
    EXPECT_NE(s.message().find("owner of ResourceSlices"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("$"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(server_->Slices().empty());
}

TEST_F(SlicePublisherTest, AMalformedDiscoveryAnswerIsAnErrorNamingThePath) {
  Start();
  server_->AnswerNext("GET /apis/resource.k8s.io", 200, R"({"versions":[{"version":7}]})");
  auto p = Publisher();
  Status s = p.Publish(Fixture("rxe_veth"));
  EXPECT_NE(s.message().find("$.versions[0].version: not a string (number)"), std::string::npos) << s.ToString();
  EXPECT_TRUE(p.Publish(Fixture("rxe_veth")).ok()) << "nothing cached from the bad answer";
}

TEST_F(SlicePublisherTest, AfterAnUpgradeFromV1beta1ToV1ItDiscoversTheVersionAgain) {
  FakeApiServerOptions o;
  o.serve_v1 = false;
  Start(o);
  auto p = Publisher();
  auto devices = Fixture("mlx5_ib_2port");
  ASSERT_TRUE(p.Publish(devices).ok());
  ASSERT_EQ(p.version(), ResourceApiVersion::kV1beta1);
  server_->SetServedVersions(/*v1=*/true, /*v1beta1=*/false);  // the control plane upgraded
  devices[0].device.ports[0].state = PortState::kDown;
  Status s = p.Publish(devices);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(p.version(), ResourceApiVersion::kV1);
  EXPECT_EQ(server_->CountRequests("PUT /apis/resource.k8s.io/v1/resourceslices/"), 1);
  EXPECT_EQ(server_->Slices()[0]["spec"]["devices"][0]["attributes"]["portState"]["string"], "DOWN");
}

TEST_F(SlicePublisherTest, TheVersionIsDiscoveredAgainForEveryUserOfTheSharedSource) {
  FakeApiServerOptions o;
  o.serve_v1 = false;
  Start(o);
  ApiVersionSource versions(client_.get());
  ASSERT_EQ(*versions.Get(), ResourceApiVersion::kV1beta1);
  server_->SetServedVersions(true, false);
  EXPECT_TRUE(versions.Forget(ResourceApiVersion::kV1beta1));
  EXPECT_FALSE(versions.Forget(ResourceApiVersion::kV1beta1)) << "only once";
  EXPECT_EQ(*versions.Get(), ResourceApiVersion::kV1);
}

TEST_F(SlicePublisherTest, ANodeRecreatedWithANewUidIsTheOwnerOfTheNextWrite) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Fixture("rxe_veth")).ok());
  server_->AddNode("node1", "node-uid-2");  // deleted and re-created: the GC takes our slice
  ASSERT_TRUE(server_->Slices().empty());
  ASSERT_TRUE(p.Publish(Fixture("rxe_veth")).ok());
  auto slices = server_->Slices();
  ASSERT_EQ(slices.size(), 1u) << "published with the stale owner: garbage-collected at once";
  EXPECT_EQ(slices[0]["metadata"]["ownerReferences"][0]["uid"], "node-uid-2");
}

TEST_F(SlicePublisherTest, ForgetOwnerMakesAMatchingPoolCompareWithTheCurrentNode) {
  Start();
  auto p = Publisher();
  ASSERT_TRUE(p.Publish(Fixture("rxe_veth")).ok());
  // A re-created Node whose garbage collection has not run yet: the slice is still there.
  json stale = server_->Slices()[0];
  server_->AddNode("node1", "node-uid-2");
  stale["metadata"].erase("resourceVersion");
  stale["metadata"]["ownerReferences"][0]["uid"] = "node-uid-1";
  server_->PutSliceV1(stale);  // stored as it is: the GC has not seen it yet
  p.ForgetOwner();
  ASSERT_TRUE(p.Publish(Fixture("rxe_veth")).ok());
  EXPECT_EQ(server_->Slices()[0]["metadata"]["ownerReferences"][0]["uid"], "node-uid-2");
}

TEST_F(SlicePublisherTest, TheServerRefusesWhatTheRealOneValidatesWith422NamingTheField) {
  Start();
  auto post = [&](const std::string& device_name, const json& attributes, const json& taints) {
    json d = {{"name", device_name}, {"attributes", attributes}};
    if (!taints.is_null()) d["taints"] = taints;
    return PostOneDeviceSlice(d);
  };
  const json ok_attr = {{"transport", {{"string", "ib"}}}};
  auto [status, body] = post("mlx5_0", ok_attr, nullptr);
  EXPECT_EQ(status, 422);
  EXPECT_NE(body.find("spec.devices[0].name"), std::string::npos) << body;
  std::tie(status, body) = post("mlx5-0", {{"bad-name", {{"string", "x"}}}}, nullptr);
  EXPECT_EQ(status, 422);
  EXPECT_NE(body.find("attributes[bad-name]"), std::string::npos) << body;
  std::tie(status, body) = post("mlx5-0", {{"fw", {{"string", std::string(65, 'x')}}}}, nullptr);
  EXPECT_EQ(status, 422);
  std::tie(status, body) = post("mlx5-0", ok_attr, json::array({{{"key", "k"}, {"effect", "Sometimes"}}}));
  EXPECT_EQ(status, 422);
  EXPECT_NE(body.find("taints[0].effect"), std::string::npos) << body;
  std::tie(status, body) = post("mlx5-0", ok_attr, nullptr);
  EXPECT_EQ(status, 201) << body;
}

// KEP-5007's rules as pkg/apis/resource/validation words them (validateDeviceBindingParameters).
TEST_F(SlicePublisherTest, TheServerRefusesInvalidBindingConditionsAsTheRealOneNamesThem) {
  Start();
  auto post = [&](const json& fields) {
    json d = {{"name", "mlx5-0"}};
    d.update(fields);
    auto [status, body] = PostOneDeviceSlice(d);
    return std::make_pair(status, status == 422 ? json::parse(body).value("message", "") : body);
  };
  const json five = json::array({"A", "B", "C", "D", "E"});
  const std::pair<json, std::string> refused[] = {
      {{{"bindingConditions", json::array({"PortActive"})}},
       "spec.devices[0].bindingFailureConditions: Invalid value: null: bindingFailureConditions are required to use bindingConditions"},
      {{{"bindingFailureConditions", json::array({"Failed"})}},
       "spec.devices[0].bindingConditions: Invalid value: null: bindingConditions are required to use bindingFailureConditions"},
      {{{"bindingConditions", five}, {"bindingFailureConditions", json::array({"F"})}},
       "spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items"},
      {{{"bindingConditions", json::array({"A"})}, {"bindingFailureConditions", five}},
       "spec.devices[0].bindingFailureConditions: Too many: 5: must have at most 4 items"},
      {{{"bindingConditions", json::array({"Port Active"})}, {"bindingFailureConditions", json::array({"F"})}},
       "spec.devices[0].bindingConditions[0]: Invalid value: \"Port Active\""},
      {{{"bindingConditions", json::array({"A", "A"})}, {"bindingFailureConditions", json::array({"F"})}},
       "spec.devices[0].bindingConditions[1]: Duplicate value: \"A\""},
      {{{"bindingConditions", json::array({"A"})}, {"bindingFailureConditions", json::array({"A"})}},
       "spec.devices[0].bindingFailureConditions[0]: Invalid value: \"A\": bindingFailureConditions must not overlap with bindingConditions"},
  };
  for (const auto& [fields, said] : refused) {
    auto [status, body] = post(fields);
    EXPECT_EQ(status, 422) << fields.dump();
    EXPECT_NE(body.find(said), std::string::npos) << body;
  }
  auto [status, body] = post({{"bindingConditions", json::array({"PortActive"})},
                              {"bindingFailureConditions", json::array({"rdma.rdmak8s.io/PortActivationFailed"})},
                              {"bindsToNode", true}});
  ASSERT_EQ(status, 201) << body;
  const json stored = server_->Slices()[0]["spec"]["devices"][0];
  EXPECT_EQ(stored["bindingConditions"], json::array({"PortActive"}));
  EXPECT_EQ(stored["bindsToNode"], true);
}

json WaitingIbDeviceSliceDevice(const std::vector<json>& slices) {
  return slices.empty() ? json() : slices[0]["spec"]["devices"][0];
}

// A port the subnet manager has not brought up: published with binding conditions where the
// server keeps them, and tainted (said once) where it drops them (DRADeviceBindingConditions off).
TEST_F(SlicePublisherTest, AWaitingInfiniBandPortIsHeldAtBindingOrTaintedWhereTheServerDropsBindingConditions) {
  for (bool gate : {true, false}) {
    FakeApiServerOptions o;
    o.device_binding_conditions = gate;
    client_.reset();
    server_.reset();  // the socket path is free again
    Start(o);
    auto p = Publisher();
    auto devices = Fixture("mlx5_ib_2port");
    for (Port& port : devices[0].device.ports) port.state = PortState::kInit;
    devices[0].healthy = false;
    devices[0].unhealthy_reason = "PortNotActive";
    testing::LogCapture log;
    ASSERT_TRUE(p.Publish(devices).ok());
    const json d = WaitingIbDeviceSliceDevice(server_->Slices());
    EXPECT_EQ(p.features().binding_conditions, gate);
    EXPECT_EQ(d.contains("bindingConditions"), gate) << d.dump();
    EXPECT_EQ(d.contains("taints"), !gate) << d.dump();
    EXPECT_EQ(log.Text().find("dropped the binding conditions") != std::string::npos, !gate) << log.Text();
  }
}

}  // namespace
}  // namespace rdmak8s::dra
