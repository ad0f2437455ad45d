#include "dra/api/claim_reader.h"

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dra/claim_cdi_spec.h"
#include "dra/preparer.h"
#include "fakes/fake_api_server.h"
#include "rdmak8s/base/json_reader.h"

#include "support/large_claim.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"
#include "unit/dra/api/fake_api_client.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";

ClaimDeadline Soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(30); }

// A claim as a v1 API server stores it (spec.devices.requests[].exactly).
json Claim() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ml", "name": "train-nic", "uid": "claim-uid", "resourceVersion": "7"},
    "spec": {"devices": {"requests": [
      {"name": "nic", "exactly": {"deviceClassName": "rdma-ib", "allocationMode": "ExactCount", "count": 1}},
      {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
      {"name": "nic2", "firstAvailable": [{"name": "fast", "deviceClassName": "rdma-roce"}]}]}},
    "status": {
      "allocation": {"devices": {
        "results": [
          {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-1"},
          {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node1", "device": "gpu-0"},
          {"request": "nic2/fast", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-2"}],
        "config": [
          {"source": "FromClass", "opaque": {"driver": "rdma.rdmak8s.io", "parameters": {"ucxEnv": true}}},
          {"source": "FromClaim", "requests": ["nic2"], "opaque": {"driver": "rdma.rdmak8s.io", "parameters": {"ncclEnv": true}}},
          {"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"x": 1}}}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}},
      "reservedFor": [{"resource": "pods", "name": "p0", "uid": "pod-uid-0"},
                      {"resource": "pods", "name": "p1", "uid": "pod-uid-1"}]}})");
}

// The same claim as a 1.32/1.33 server stores it: v1beta1 requests carry deviceClassName
// directly and results may say adminAccess; status is the same.
json ClaimV1beta1() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ml", "name": "old-nic", "uid": "beta-uid"},
    "spec": {"devices": {"requests": [{"name": "nic", "deviceClassName": "rdma-ib", "allocationMode": "ExactCount", "count": 1}]}},
    "status": {
      "allocation": {"devices": {
        "results": [{"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-1", "adminAccess": false}],
        "config": [{"source": "FromClaim", "requests": ["nic"], "opaque": {"driver": "rdma.rdmak8s.io", "parameters": {"env": {"A": "1"}}}}]}},
      "reservedFor": [{"resource": "pods", "name": "p0", "uid": "pod-uid-0"}]}})");
}

class ClaimReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start(dir_.path() + "/api.sock"));
    client_ = ClientOf(server_, dir_.path() + "/api.sock");
    server_.AddClaim(Claim());
  }
  rdmak8s::testing::TempDir dir_;
  rdmak8s::testing::FakeApiServer server_;
  std::unique_ptr<CurlKubeClient> client_;
};

TEST_F(ClaimReaderTest, ReadsEveryResultConfigAndReservationOfTheClaim) {
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  auto c = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->namespace_name, "ml");
  EXPECT_EQ(c->name, "train-nic");
  EXPECT_EQ(c->uid, "claim-uid");
  EXPECT_TRUE(c->allocated);
  // Every driver's results: the preparer takes ours (ResultsOfOtherDriversAreLeftToThem).
  EXPECT_EQ(c->results, (std::vector<DeviceResult>{{"nic", kDriver, "node1", "mlx5-1"},
                                                   {"gpu", "gpu.nvidia.com", "node1", "gpu-0"},
                                                   {"nic2/fast", kDriver, "node1", "mlx5-2"}}));
  ASSERT_EQ(c->config.size(), 3u);
  EXPECT_EQ(c->config[0].source, "FromClass");
  EXPECT_TRUE(c->config[0].requests.empty());
  EXPECT_EQ(c->config[0].driver, kDriver);
  EXPECT_EQ(json::parse(c->config[0].parameters), json::parse(R"({"ucxEnv": true})"));
  EXPECT_EQ(c->config[1].source, "FromClaim");
  EXPECT_EQ(c->config[1].requests, std::vector<std::string>{"nic2"});
  EXPECT_EQ(c->config[2].driver, "gpu.nvidia.com");
  EXPECT_EQ(c->reserved_for, (std::vector<ConsumerReference>{{"", "pods", "p0", "pod-uid-0"},
                                                              {"", "pods", "p1", "pod-uid-1"}}));
}

TEST_F(ClaimReaderTest, ReadsAV1beta1ClaimThroughTheV1beta1Path) {
  server_.AddClaim(ClaimV1beta1());
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1beta1);
  auto c = reader.GetClaim("ml", "old-nic", Soon());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->uid, "beta-uid");
  EXPECT_EQ(c->results, (std::vector<DeviceResult>{{"nic", kDriver, "node1", "mlx5-1"}}));
  ASSERT_EQ(c->config.size(), 1u);
  EXPECT_EQ(json::parse(c->config[0].parameters), json::parse(R"({"env": {"A": "1"}})"));
  EXPECT_EQ(c->reserved_for.size(), 1u);
  EXPECT_EQ(server_.CountRequests("GET /apis/resource.k8s.io/v1beta1/namespaces/ml/resourceclaims/old-nic"), 1);
}

TEST_F(ClaimReaderTest, EveryReadAsksTheServerAgain) {
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  ASSERT_TRUE(reader.GetClaim("ml", "train-nic", Soon()).ok());
  json replaced = Claim();
  replaced["metadata"]["uid"] = "new-uid";
  server_.AddClaim(replaced);
  auto c = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->uid, "new-uid");
  EXPECT_EQ(server_.CountRequests("GET /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train-nic"), 2);
}

TEST_F(ClaimReaderTest, AMissingClaimIsNotFoundNamingIt) {
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  auto v = reader.GetClaim("ml", "gone", Soon());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_NE(v.status().message().find("/namespaces/ml/resourceclaims/gone"), std::string::npos);
}

TEST_F(ClaimReaderTest, AnUnreachableServerIsUnavailableNamingTheClaim) {
  server_.Stop();
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  auto v = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(v.status().message().find("ml/train-nic"), std::string::npos) << v.status().message();
}

TEST_F(ClaimReaderTest, TheApiVersionIsAskedWhenFirstNeededUntilTheServerAnswers) {
  rdmak8s::testing::FakeApiServer later;  // not up yet
  KubeConfig c;
  c.server = "http://localhost";
  c.unix_socket = dir_.path() + "/later.sock";
  auto client = std::move(*CurlKubeClient::Create(c));
  ApiVersionSource versions(client.get());
  ApiClaimReader reader(client.get(), &versions);
  auto down = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(down.status().message().find("ml/train-nic"), std::string::npos) << down.status().message();
  EXPECT_NE(down.status().message().find("resource.k8s.io versions"), std::string::npos)
      << down.status().message();

  ASSERT_TRUE(later.Start(dir_.path() + "/later.sock"));
  later.AddClaim(Claim());
  auto up = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  auto v = versions.Get();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, ResourceApiVersion::kV1);
}

// Issue 24 item 2: the version discovery a first claim read makes is bounded by that read's
// deadline, and so is a second read's wait for it.
TEST_F(ClaimReaderTest, AHungVersionDiscoveryEndsByEachReadsDeadline) {
  ApiVersionSource versions(client_.get());
  ApiClaimReader reader(client_.get(), &versions);
  server_.HoldRequests("/apis/resource.k8s.io");
  auto first = std::async(std::launch::async, [&] {
    return reader.GetClaim("ml", "train-nic", std::chrono::steady_clock::now() + std::chrono::seconds(2));
  });
  ASSERT_TRUE(server_.WaitForHeld(1, std::chrono::seconds(30))) << "the discovery never reached the server";
  auto second = reader.GetClaim("ml", "train-nic", std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kDeadlineExceeded) << second.status().ToString();
  EXPECT_NE(second.status().message().find("another discovery"), std::string::npos) << second.status().message();
  ASSERT_EQ(first.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the first read waited on the hung discovery past its deadline";
  auto r = first.get();
  server_.ReleaseHeld();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_NE(r.status().message().find("discover resource.k8s.io"), std::string::npos) << r.status().message();
  // Nothing was cached from the failed discovery: once the server answers, the read works.
  auto again = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(ClaimReaderTest, AfterTheServerDropsV1beta1ForV1TheNextReadUsesV1) {
  server_.SetServedVersions(/*v1=*/false, /*v1beta1=*/true);
  ApiVersionSource versions(client_.get());
  ApiClaimReader reader(client_.get(), &versions);
  ASSERT_TRUE(reader.GetClaim("ml", "train-nic", Soon()).ok());
  ASSERT_EQ(*versions.Get(), ResourceApiVersion::kV1beta1);
  server_.SetServedVersions(/*v1=*/true, /*v1beta1=*/false);  // upgraded while we run
  auto gone = reader.GetClaim("ml", "train-nic", Soon());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);  // kubelet retries
  auto again = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*versions.Get(), ResourceApiVersion::kV1);
}

TEST_F(ClaimReaderTest, AnUnallocatedClaimReadsAsNotAllocated) {
  json c = Claim();
  c["metadata"]["name"] = "pending";
  c["status"].erase("allocation");
  server_.AddClaim(c);
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  auto v = reader.GetClaim("ml", "pending", Soon());
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->allocated);
  EXPECT_TRUE(v->results.empty());
  EXPECT_EQ(v->reserved_for.size(), 2u);
}

// The preparer over the real reader and a real HTTP server: what kubelet's NodePrepareResources
// gets from a claim on the API server.
class PreparerOverApiTest : public ClaimReaderTest {
 protected:
  void SetUp() override {
    ClaimReaderTest::SetUp();
    options_.driver_name = kDriver;
    options_.state_dir = dir_.path() + "/state";
    options_.cdi_dir = dir_.path() + "/cdi";
    options_.pod_devices_dir = dir_.path() + "/pods";
    std::filesystem::create_directories(options_.cdi_dir);
    catalog_.Update({{"mlx5_1", {dp::testdev::Ib("mlx5_1", 1, "0000:3b:00.1"), {}, node::Presence::kPresent}},
                     {"mlx5_2", {dp::testdev::Roce("mlx5_2", 2, "eth0"), {}, node::Presence::kPresent}}});
    reader_ = std::make_unique<ApiClaimReader>(client_.get(), ResourceApiVersion::kV1);
    auto p = Preparer::Create(options_, reader_.get(), &catalog_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    preparer_ = std::move(p).value();
  }
  PreparerOptions options_;
  DeviceCatalog catalog_{"node1"};
  std::unique_ptr<ApiClaimReader> reader_;
  std::unique_ptr<Preparer> preparer_;
};

TEST_F(PreparerOverApiTest, PreparesOurDriversResultsOnly) {
  auto r = preparer_->Prepare({"ml", "claim-uid", "train-nic"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].request, "nic");
  EXPECT_EQ((*r)[0].rdma_dev, "mlx5_1");
  EXPECT_EQ((*r)[1].request, "nic2/fast");
  EXPECT_EQ((*r)[1].rdma_dev, "mlx5_2");
  EXPECT_EQ(preparer_->Claims().at("claim-uid").pod_uids,
            (std::vector<std::string>{"pod-uid-0", "pod-uid-1"}));
}

TEST_F(PreparerOverApiTest, AnotherUidIsAFailedPrecondition) {
  auto v = preparer_->Prepare({"ml", "old-uid", "train-nic"});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(v.status().message().find("old-uid"), std::string::npos);
}

TEST_F(PreparerOverApiTest, AnUnallocatedClaimIsAFailedPrecondition) {
  json c = Claim();
  c["metadata"]["name"] = "pending";
  c["status"].erase("allocation");
  server_.AddClaim(c);
  auto v = preparer_->Prepare({"ml", "claim-uid", "pending"});
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(v.status().message().find("not allocated"), std::string::npos);
}

// Issue 24 item 2: a slow API server must not stall the node. Bounds that only a stalled
// preparer reaches; no assertion on how long anything takes.
constexpr std::chrono::seconds kBound{30};

json NamedClaim(const std::string& name, const std::string& uid) {
  json c = Claim();
  c["metadata"]["name"] = name;
  c["metadata"]["uid"] = uid;
  return c;
}

TEST_F(PreparerOverApiTest, AHungClaimReadHoldsUpNoUnprepareNoPreparedClaimAndNoOtherClaim) {
  // The hung read outlasts every bound below: only a preparer that does not wait for it passes.
  options_.claim_read_timeout = std::chrono::minutes(5);
  auto p = Preparer::Create(options_, reader_.get(), &catalog_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  preparer_ = std::move(p).value();
  server_.AddClaim(NamedClaim("prepared-nic", "prepared-uid"));
  server_.AddClaim(NamedClaim("done-nic", "done-uid"));
  server_.AddClaim(NamedClaim("other-nic", "other-uid"));
  ASSERT_TRUE(preparer_->Prepare({"ml", "prepared-uid", "prepared-nic"}).ok());
  ASSERT_TRUE(preparer_->Prepare({"ml", "done-uid", "done-nic"}).ok());

  server_.HoldRequests("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train-nic");
  auto hung = std::async(std::launch::async, [&] { return preparer_->Prepare({"ml", "claim-uid", "train-nic"}); });
  ASSERT_TRUE(server_.WaitForHeld(1, kBound)) << "the claim read never reached the server";

  auto unprepare = std::async(std::launch::async, [&] { return preparer_->Unprepare({"ml", "done-uid", "done-nic"}); });
  auto again = std::async(std::launch::async, [&] { return preparer_->Prepare({"ml", "prepared-uid", "prepared-nic"}); });
  auto other = std::async(std::launch::async, [&] { return preparer_->Prepare({"ml", "other-uid", "other-nic"}); });
  const bool unprepared = unprepare.wait_for(kBound) == std::future_status::ready;
  const bool answered = again.wait_for(kBound) == std::future_status::ready;
  const bool prepared = other.wait_for(kBound) == std::future_status::ready;
  const bool still_hung = hung.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  server_.ReleaseHeld();
  ASSERT_TRUE(unprepared) << "an unprepare waited for another claim's hung read";
  ASSERT_TRUE(answered) << "a prepared claim waited for another claim's hung read";
  ASSERT_TRUE(prepared) << "another claim's prepare waited for a hung read";
  EXPECT_TRUE(still_hung) << "the hung prepare ended before the others were checked";
  Status u = unprepare.get();
  EXPECT_TRUE(u.ok()) << u.ToString();
  auto a = again.get();
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  auto o = other.get();
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  hung.get().status().IgnoreError();  // released: it may have its answer or not
}

TEST_F(PreparerOverApiTest, AHungClaimReadEndsInsideKubeletsDeadline) {
  server_.HoldRequests("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train-nic");
  // kubelet's 45 s, nearly spent: the read gets what is left less the margin for the answer.
  const auto call_deadline = std::chrono::steady_clock::now() + options_.answer_margin + std::chrono::milliseconds(500);
  auto r = preparer_->Prepare({"ml", "claim-uid", "train-nic"}, call_deadline);
  server_.ReleaseHeld();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_NE(r.status().message().find("ml/train-nic"), std::string::npos) << r.status().message();
  EXPECT_TRUE(preparer_->Claims().empty());
}

TEST_F(PreparerOverApiTest, A429WithRetryAfter20IsAnsweredAtOnceWhenItEndsPastTheDeadline) {
  server_.FailNextFor("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train-nic", 429, 10, "20");
  auto r = std::async(std::launch::async, [&] {
    return preparer_->Prepare({"ml", "claim-uid", "train-nic"}, std::chrono::steady_clock::now() + std::chrono::seconds(45));
  });
  ASSERT_EQ(r.wait_for(kBound), std::future_status::ready) << "the prepare waited out Retry-After: 20";
  auto v = r.get();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable) << v.status().ToString();
  EXPECT_NE(v.status().message().find("HTTP 429"), std::string::npos) << v.status().message();
  EXPECT_NE(v.status().message().find("past the caller's deadline"), std::string::npos) << v.status().message();
}

TEST_F(PreparerOverApiTest, AnUnprepareDuringTheClaimReadLeavesNothingWritten) {
  server_.HoldRequests("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train-nic");
  auto hung = std::async(std::launch::async, [&] { return preparer_->Prepare({"ml", "claim-uid", "train-nic"}); });
  ASSERT_TRUE(server_.WaitForHeld(1, kBound)) << "the claim read never reached the server";
  ASSERT_TRUE(preparer_->Unprepare({"ml", "claim-uid", "train-nic"}).ok());
  server_.ReleaseHeld();
  auto r = hung.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("unprepared while it was read"), std::string::npos) << r.status().message();
  EXPECT_TRUE(preparer_->Claims().empty());
  EXPECT_FALSE(std::filesystem::exists(ClaimCdiSpecPath(options_.cdi_dir, options_.driver_name, "claim-uid")));
}

// Issue 24 item 3: kubelet's names never shape the request.
TEST_F(ClaimReaderTest, AHostileNamespaceOrNameSendsNoRequest) {
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  const size_t before = server_.Requests().size();
  auto traversal = reader.GetClaim("../../../../api/v1/namespaces/kube-system/secrets/admin-token?x=", "n", Soon());
  EXPECT_EQ(traversal.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(traversal.status().message().find("claim namespace \"../../"), std::string::npos)
      << traversal.status().message();
  auto watch = reader.GetClaim("ml", "x?watch=true&resourceVersion=0", Soon());
  EXPECT_EQ(watch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(watch.status().message().find("claim name \"x?watch=true"), std::string::npos) << watch.status().message();
  EXPECT_EQ(server_.Requests().size(), before);
}

// Issue 32 item 4: a claim answer nested 300,000 levels deep ended the driver with SIGSEGV;
// 5,000 levels fit a tenant's 10 KiB of opaque config. Both are refused naming the bound.
TEST_F(ClaimReaderTest, AClaimNestedPastTheBoundIsRefusedNamingTheDepth) {
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  const std::string path = "GET /apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/train-nic";
  for (size_t depth : {size_t{5000}, size_t{300000}}) {
    std::string body = Claim().dump();
    const std::string params = R"({"ucxEnv":true})";
    body.replace(body.find(params), params.size(), std::string(depth, '[') + std::string(depth, ']'));
    server_.AnswerNext(path, 200, body);
    auto r = reader.GetClaim("ml", "train-nic", Soon());
    ASSERT_FALSE(r.ok()) << depth;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("nested deeper than 128 levels"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("ml/train-nic"), std::string::npos) << r.status().message();
  }
  // Nesting within the bound is read, and handed on as it was written.
  json c = Claim();
  json deep = json::array();
  for (size_t i = 0; i < json_reader::kMaxDepth - 9; ++i) deep = json::array({deep});
  c["status"]["allocation"]["devices"]["config"][0]["opaque"]["parameters"] = deep;
  server_.AddClaim(c);
  auto ok = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(json::parse(ok->config[0].parameters), deep);
}

// Issue 32 item 3: one answer may not be larger than the largest object the API server stores
// (etcd's 1.5 MiB, JSON-escaped): a 4 MiB one is refused unread, naming the limit.
TEST_F(ClaimReaderTest, AnAnswerLargerThanAnObjectCanBeIsRefused) {
  json c = Claim();
  c["metadata"]["annotations"]["big"] = std::string(4 << 20, 'x');
  server_.AddClaim(c);
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  auto r = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(std::to_string(kMaxObjectBytes) + " bytes"), std::string::npos)
      << r.status().message();
}

// The issue's large claims: 45,000 labels and the managedFields the API server adds, read as
// the same claim (only the fields the driver uses are built).
TEST_F(ClaimReaderTest, AClaimWithManyLabelsAndManagedFieldsReadsAsTheSameClaim) {
  ApiClaimReader reader(client_.get(), ResourceApiVersion::kV1);
  auto plain = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  json c = Claim();
  rdmak8s::testing::Swell(c, 45000);
  server_.AddClaim(c);
  auto big = reader.GetClaim("ml", "train-nic", Soon());
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(*big, *plain);
}

// A KubeApi holding the first `held` claim reads until released; later ones answer at once.
class HoldingApi : public KubeApi {
 public:
  explicit HoldingApi(int held) : to_hold_(held) {}
  StatusOr<HttpResponse> Send(const HttpRequest&) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (to_hold_ > 0) {
      --to_hold_;
      ++holding_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return releases_ > 0; });
      --releases_;
      --holding_;
    }
    return HttpResponse{200, Claim().dump(), ""};
  }
  const std::string& server() const override { return server_; }
  void WaitHolding(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return holding_ >= n; });
  }
  void Release(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    releases_ += n;
    cv_.notify_all();
  }

 private:
  const std::string server_ = "https://holding";
  std::mutex mu_;
  std::condition_variable cv_;
  int to_hold_, holding_ = 0, releases_ = 0;
};

// Issue 32 item 3: four 1.4 MB claims prepared at once took the driver past its memory limit.
// At most kMaxConcurrentReads reads are in flight: the next waits for a slot, here until its
// deadline while every slot is held, and gets one as soon as a read ends.
TEST(ApiClaimReaderBoundTest, ReadsPastTheBoundWaitForASlot) {
  constexpr int kBound = ApiClaimReader::kMaxConcurrentReads;
  HoldingApi api(kBound);
  ApiClaimReader reader(&api, ResourceApiVersion::kV1);
  struct ReleaseAll {  // whatever fails, no read stays held when the test ends
    HoldingApi* api;
    ~ReleaseAll() { api->Release(1000); }
  };
  std::vector<std::future<StatusOr<ResourceClaim>>> held;
  ReleaseAll release{&api};  // destroyed before `held`: the futures' threads end
  for (int i = 0; i < kBound; ++i) {
    held.push_back(std::async(std::launch::async, [&] { return reader.GetClaim("ml", "train-nic", Soon()); }));
  }
  api.WaitHolding(kBound);
  // Every slot is held: this read's deadline passes waiting for one (it would be answered at once).
  auto waited = reader.GetClaim("ml", "train-nic", std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  ASSERT_FALSE(waited.ok()) << "a read past the bound was sent";
  EXPECT_EQ(waited.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(waited.status().message().find(std::to_string(kBound) + " other claim reads"), std::string::npos)
      << waited.status().message();
  auto next = std::async(std::launch::async, [&] { return reader.GetClaim("ml", "train-nic", Soon()); });
  api.Release(1);  // one read ends: its slot goes to `next`
  EXPECT_TRUE(next.get().ok());
  api.Release(kBound - 1);
  for (auto& f : held) EXPECT_TRUE(f.get().ok());
}

TEST(ParseResourceClaimTest, GarbageIsInvalidArgument) {
  EXPECT_EQ(ParseResourceClaim("{").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseResourceClaim(R"({"metadata": {}})").status().code(), StatusCode::kInvalidArgument);
}

// Each malformed claim, and the field its error must name.
TEST(ParseResourceClaimTest, MalformedFieldsAreNamedInTheError) {
  struct Case {
    std::function<void(json&)> spoil;
    std::string field;
  };
  std::vector<Case> cases = {
      {[](json& c) { c.erase("metadata"); }, "metadata: missing"},
      {[](json& c) { c["metadata"]["uid"] = 5; }, "metadata.uid: not a string"},
      {[](json& c) { c["kind"] = "Pod"; }, "kind is Pod"},
      {[](json& c) { c["apiVersion"] = "resource.k8s.io/v2alpha9"; }, "apiVersion resource.k8s.io/v2alpha9"},
      {[](json& c) { c["status"]["allocation"]["devices"]["results"][1].erase("driver"); },
       "status.allocation.devices.results[1].driver: missing"},
      {[](json& c) { c["status"]["allocation"]["devices"]["results"] = "x"; },
       "status.allocation.devices.results: not a list"},
      {[](json& c) { c["status"]["allocation"]["devices"]["config"][1]["requests"] = json::array({3}); },
       "status.allocation.devices.config[1].requests[0]: not a string"},
      {[](json& c) { c["status"]["allocation"]["devices"]["config"][0]["opaque"].erase("driver"); },
       "status.allocation.devices.config[0].opaque.driver: missing"},
      {[](json& c) { c["status"]["reservedFor"][0].erase("uid"); }, "status.reservedFor[0].uid: missing"},
      {[](json& c) { c["status"]["allocation"] = 1; }, "status.allocation: not an object"},
  };
  for (const auto& k : cases) {
    json c = Claim();
    k.spoil(c);
    auto r = ParseResourceClaim(c.dump());
    ASSERT_FALSE(r.ok()) << k.field;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << k.field;
    EXPECT_NE(r.status().message().find(k.field), std::string::npos) << r.status().message();
  }
}

TEST(ParseResourceClaimTest, ConfigWithoutOpaqueIsSkippedAndAbsentParametersAreAnEmptyObject) {
  json c = ClaimV1beta1();
  c["status"]["allocation"]["devices"]["config"] = json::parse(
      R"([{"source": "FromClass", "futureKind": {}}, {"source": "FromClaim", "opaque": {"driver": "d"}}])");
  auto r = ParseResourceClaim(c.dump());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config, (std::vector<OpaqueConfig>{{"FromClaim", {}, "d", "{}"}}));
}

}  // namespace
}  // namespace rdmak8s::dra
