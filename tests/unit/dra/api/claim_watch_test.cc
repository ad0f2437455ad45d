// Tests of the claim list+watch that finds claims held at binding on our devices
// (dra/api/claim_watch.h): only ours with unanswered binding conditions are handed on as
// waiting, others are let go and not kept; watch events feed the setter; 410 asks for a relist.
#include "dra/api/claim_watch.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kPool[] = "node-a";

json Result(const std::string& driver, const std::string& pool, const std::string& device, bool binding) {
  json r = {{"request", "nic"}, {"driver", driver}, {"pool", pool}, {"device", device}};
  if (binding) {
    r["bindingConditions"] = {"PortActive"};
    r["bindingFailureConditions"] = {"PortActivationFailed"};
  }
  return r;
}

json Claim(const std::string& uid, json results, json status_devices = json::array()) {
  return {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
          {"metadata", {{"namespace", "team"}, {"name", "c-" + uid}, {"uid", uid}, {"resourceVersion", "7"},
                        {"annotations", {{"big", std::string(4096, 'x')}}}}},
          {"spec", {{"devices", {{"requests", json::array()}}}}},
          {"status", {{"allocation", {{"devices", {{"results", results}}}}}, {"devices", status_devices}}}};
}

json Entry(const std::string& device, const std::string& type, const std::string& status) {
  return {{"driver", kDriver}, {"pool", kPool}, {"device", device},
          {"conditions", json::array({{{"type", type}, {"status", status}, {"reason", "R"},
                                       {"lastTransitionTime", "2026-12-05T00:00:00Z"}}})}};
}

// Answers discovery (v1), one list page of `items`, and a watch of `events` lines.
class ScriptedApi : public KubeApi {
 public:
  StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    paths.push_back(request.path);
    if (request.path == "/apis/resource.k8s.io") {
      return HttpResponse{200, R"({"kind":"APIGroup","versions":[{"version":"v1"}]})", ""};
    }
    return HttpResponse{200, json{{"kind", "ResourceClaimList"}, {"metadata", {{"resourceVersion", "42"}}},
                                  {"items", items}}.dump(), ""};
  }
  StatusOr<HttpResponse> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_line,
                                const std::function<bool()>&) override {
    paths.push_back(request.path);
    for (const auto& e : events) {
      if (!on_line(e.dump())) break;
    }
    return HttpResponse{200, "", ""};
  }
  const std::string& server() const override { return server_; }

  json items = json::array();
  std::vector<json> events;
  std::vector<std::string> paths;

 private:
  std::string server_ = "https://api";
};

TEST(DecodeHeldClaimTest, OnlyOurDevicesWithUnansweredBindingConditionsWait) {
  const json results = json::array({Result(kDriver, kPool, "mlx5-0", true),
                                    Result(kDriver, kPool, "mlx5-1", false),           // no conditions
                                    Result(kDriver, "node-b", "mlx5-2", true),         // another node
                                    Result("gpu.example.com", kPool, "gpu-0", true)});  // another driver
  auto c = DecodeHeldClaim(Claim("u1", results), "$", kDriver, kPool);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->uid, "u1");
  EXPECT_EQ(c->namespace_name, "team");
  ASSERT_EQ(c->waiting.size(), 1u);
  EXPECT_EQ(c->waiting[0].device, "mlx5-0");
}

TEST(DecodeHeldClaimTest, AnEntryThatAnsweredTheConditionsOrFailedEndsTheWait) {
  const json results = json::array({Result(kDriver, kPool, "mlx5-0", true)});
  for (const auto& [type, status, waits] :
       {std::tuple{"PortActive", "True", false}, std::tuple{"PortActivationFailed", "True", false},
        std::tuple{"PortActive", "False", true}}) {
    auto c = DecodeHeldClaim(Claim("u1", results, json::array({Entry("mlx5-0", type, status)})), "$", kDriver, kPool);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->waiting.size(), waits ? 1u : 0u) << type << "=" << status;
  }
}

TEST(DecodeHeldClaimTest, AnotherDriversEntryForADeviceOfTheSameNameDoesNotEndTheWait) {
  // Pools are named after the node by every driver: a GPU driver's entry can carry our pool and
  // device names. Only our driver's entry answers our binding conditions.
  const json results = json::array({Result(kDriver, kPool, "mlx5-0", true)});
  json theirs = Entry("mlx5-0", "PortActive", "True");
  theirs["driver"] = "gpu.example.com";
  auto c = DecodeHeldClaim(Claim("u1", results, json::array({theirs})), "$", kDriver, kPool);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->waiting.size(), 1u);
  // Ours, after theirs, ends it.
  c = DecodeHeldClaim(Claim("u1", results, json::array({theirs, Entry("mlx5-0", "PortActive", "True")})), "$",
                      kDriver, kPool);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->waiting.size(), 0u);
}

TEST(DecodeHeldClaimTest, AnEntryKeyOfTheWrongTypeIsAnErrorNamingIt) {
  // Any entry's, not only ours: the keys are what the match reads.
  json theirs = Entry("gpu-0", "Ready", "True");
  theirs["driver"] = "gpu.example.com";
  theirs["shareID"] = 7;
  auto c = DecodeHeldClaim(Claim("u1", json::array({Result(kDriver, kPool, "mlx5-0", true)}), json::array({theirs})),
                           "$", kDriver, kPool);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("$.status.devices[0].shareID"), std::string::npos) << c.status().message();
}

TEST(DecodeHeldClaimTest, AMalformedClaimIsAnErrorNamingTheField) {
  json bad = Claim("u1", json::array({Result(kDriver, kPool, "mlx5-0", true)}));
  bad["status"]["allocation"]["devices"]["results"][0]["bindingConditions"] = json::array({1});
  auto c = DecodeHeldClaim(bad, "$", kDriver, kPool);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("$.status.allocation.devices.results[0].bindingConditions[0]"),
            std::string::npos) << c.status().message();
}

class ClaimWatchTest : public ::testing::Test {
 protected:
  ClaimWatchTest() {
    BindingConditionOptions o;
    o.driver_name = kDriver;
    setter_ = std::make_unique<BindingConditionSetter>(o, nullptr, &catalog_);
  }
  ScriptedApi api_;
  ApiVersionSource versions_{&api_};
  ClaimWatch watch_{&api_, &versions_, kDriver, kPool};
  DeviceCatalog catalog_{kPool};
  std::unique_ptr<BindingConditionSetter> setter_;
};

TEST_F(ClaimWatchTest, TheListOfEveryNamespaceKeepsOnlyClaimsHeldOnOurDevices) {
  api_.items = json::array({Claim("ours", json::array({Result(kDriver, kPool, "mlx5-0", true)})),
                            Claim("plain", json::array({Result(kDriver, kPool, "mlx5-1", false)})),
                            Claim("other", json::array({Result("gpu.example.com", "n", "g", true)}))});
  std::string rv;
  ASSERT_TRUE(watch_.List(&rv, [&](const HeldClaim& c) { setter_->Seen(c); }).ok());
  EXPECT_EQ(rv, "42");
  EXPECT_EQ(api_.paths.back(), "/apis/resource.k8s.io/v1/resourceclaims?limit=100");
  const auto held = setter_->held();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].uid, "ours");
}

TEST_F(ClaimWatchTest, WatchEventsHoldAndLetGoAndGoneRelists) {
  const json ours = Claim("ours", json::array({Result(kDriver, kPool, "mlx5-0", true)}));
  api_.events = {{{"type", "ADDED"}, {"object", ours}}};
  std::string rv = "42";
  auto feed = [&](bool deleted, const HeldClaim& c) { deleted ? setter_->Gone(c.uid) : setter_->Seen(c); };
  ASSERT_TRUE(watch_.WatchOnce(&rv, 300, feed, [] { return false; }).ok());
  EXPECT_EQ(setter_->held().size(), 1u);
  EXPECT_EQ(rv, "7");
  EXPECT_NE(api_.paths.back().find("resourceclaims?watch=true"), std::string::npos) << api_.paths.back();
  EXPECT_NE(api_.paths.back().find("resourceVersion=42"), std::string::npos) << api_.paths.back();

  // Our entry answered (the setter's own write coming back): let go.
  api_.events = {{{"type", "MODIFIED"},
                  {"object", Claim("ours", ours["status"]["allocation"]["devices"]["results"],
                                   json::array({Entry("mlx5-0", "PortActive", "True")}))}}};
  ASSERT_TRUE(watch_.WatchOnce(&rv, 300, feed, [] { return false; }).ok());
  EXPECT_TRUE(setter_->held().empty());

  api_.events = {{{"type", "ADDED"}, {"object", ours}}, {{"type", "DELETED"}, {"object", ours}}};
  ASSERT_TRUE(watch_.WatchOnce(&rv, 300, feed, [] { return false; }).ok());
  EXPECT_TRUE(setter_->held().empty());

  api_.events = {{{"type", "ERROR"}, {"object", {{"kind", "Status"}, {"code", 410}, {"message", "too old"}}}}};
  Status s = watch_.WatchOnce(&rv, 300, feed, [] { return false; });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
}

}  // namespace
}  // namespace rdmak8s::dra
