// ApiVersionSource and the claim reader's use of it (issue 32 item 2): no lock is held across a
// request, and a missing claim is not a missing API version.
#include "dra/api/api_version.h"

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dra/api/claim_reader.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr char kDiscovery[] = "/apis/resource.k8s.io";

// A KubeApi whose answers the test holds and releases: discoveries answer v1; a claim GET
// answers 404 as the API server says a missing claim (details.name) or, with
// `version_gone`, a path it does not serve (empty details).
class ScriptedApi : public KubeApi {
 public:
  StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    const bool discovery = request.path == kDiscovery;
    std::unique_lock<std::mutex> lock(mu_);
    (discovery ? discoveries_ : claim_reads_)++;
    cv_.notify_all();
    bool& hold = discovery ? hold_discovery_ : hold_claim_;
    cv_.wait(lock, [&] { return !hold; });
    if (discovery) {
      return HttpResponse{200, R"({"kind":"APIGroup","versions":[{"version":"v1"},{"version":"v1beta1"}]})", ""};
    }
    json status = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"reason", "NotFound"},
                   {"code", 404}, {"details", json::object()}};
    if (!version_gone_) status["details"] = {{"name", "gone"}, {"group", "resource.k8s.io"}, {"kind", "resourceclaims"}};
    return HttpResponse{404, status.dump(), ""};
  }
  const std::string& server() const override { return server_; }

  void Hold(bool discovery, bool claim) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_discovery_ = discovery;
    hold_claim_ = claim;
    cv_.notify_all();
  }
  void SetVersionGone(bool gone) {
    std::lock_guard<std::mutex> lock(mu_);
    version_gone_ = gone;
  }
  // Waits (for the event, no timing) until `n` discoveries / claim reads have arrived.
  void WaitFor(int discoveries, int claim_reads) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return discoveries_ >= discoveries && claim_reads_ >= claim_reads; });
  }
  int discoveries() {
    std::lock_guard<std::mutex> lock(mu_);
    return discoveries_;
  }

 private:
  const std::string server_ = "https://scripted";
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_discovery_ = false, hold_claim_ = false, version_gone_ = false;
  int discoveries_ = 0, claim_reads_ = 0;
};

ClaimDeadline Soon() { return std::chrono::steady_clock::now() + seconds(30); }

TEST(ApiVersionTest, AMissingClaimKeepsTheCachedVersion) {
  ScriptedApi api;
  ApiVersionSource versions(&api);
  ApiClaimReader reader(&api, &versions);
  ASSERT_EQ(*versions.Get(), ResourceApiVersion::kV1);
  for (int i = 0; i < 3; ++i) {
    auto r = reader.GetClaim("ml", "gone", Soon());
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  }
  ASSERT_EQ(*versions.Get(), ResourceApiVersion::kV1);
  EXPECT_EQ(api.discoveries(), 1) << "a claim's 404 threw the API version away";
}

TEST(ApiVersionTest, A404OfTheVersionsPathMakesTheNextReadDiscoverAgain) {
  ScriptedApi api;
  ApiVersionSource versions(&api);
  ApiClaimReader reader(&api, &versions);
  api.SetVersionGone(true);
  EXPECT_EQ(reader.GetClaim("ml", "gone", Soon()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reader.GetClaim("ml", "gone", Soon()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(api.discoveries(), 2);
}

// The issue's stall: a claim read's 404 arrived while the slice loop's discovery (no deadline)
// was waiting for the server; the read then waited for that discovery's lock past kubelet's
// deadline. Here the discovery never answers until the claim read and a Forget have returned.
TEST(ApiVersionTest, AClaimReadAndForgetDoNotWaitForADiscoveryInFlight) {
  ScriptedApi api;
  ApiVersionSource versions(&api);
  ApiClaimReader reader(&api, &versions);
  ASSERT_EQ(*versions.Get(), ResourceApiVersion::kV1);
  api.Hold(/*discovery=*/true, /*claim=*/true);
  struct ReleaseAll {  // whatever happens, no thread stays held when the test ends
    ScriptedApi* api;
    ~ReleaseAll() { api->Hold(false, false); }
  } release{&api};
  auto read = std::async(std::launch::async, [&] { return reader.GetClaim("ml", "gone", Soon()); });
  api.WaitFor(1, 1);                                  // the read has its version and asked
  ASSERT_TRUE(versions.Forget(ResourceApiVersion::kV1));  // another user's version 404
  auto slice_loop = std::async(std::launch::async, [&] { return versions.Get(); });
  api.WaitFor(2, 1);                                  // its discovery is in flight, held
  api.Hold(/*discovery=*/true, /*claim=*/false);     // the claim's 404 comes now
  ASSERT_EQ(read.wait_for(seconds(30)), std::future_status::ready)
      << "the claim read waited for the discovery in flight";
  EXPECT_EQ(read.get().status().code(), StatusCode::kNotFound);
  auto forget = std::async(std::launch::async, [&] { return versions.Forget(ResourceApiVersion::kV1); });
  ASSERT_EQ(forget.wait_for(seconds(30)), std::future_status::ready) << "Forget waited for the discovery in flight";
  EXPECT_FALSE(forget.get());  // nothing cached to forget
  api.Hold(false, false);
  EXPECT_EQ(*slice_loop.get(), ResourceApiVersion::kV1);
}

TEST(ApiVersionTest, AWaiterGetsTheOutcomeOfTheDiscoveryInFlight) {
  ScriptedApi api;
  ApiVersionSource versions(&api);
  api.Hold(/*discovery=*/true, /*claim=*/false);
  auto first = std::async(std::launch::async, [&] { return versions.Get(); });
  api.WaitFor(1, 0);
  auto second = std::async(std::launch::async, [&] { return versions.Get(Soon()); });
  api.Hold(false, false);
  EXPECT_EQ(*first.get(), ResourceApiVersion::kV1);
  EXPECT_EQ(*second.get(), ResourceApiVersion::kV1);
}

}  // namespace
}  // namespace rdmak8s::dra
