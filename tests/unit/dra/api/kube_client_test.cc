#include "dra/api/kube_client.h"

#include <sys/stat.h>

#include <condition_variable>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "fakes/fake_api_server.h"
#include "support/temp_dir.h"

namespace rdmak8s::dra {
namespace {

using rdmak8s::testing::FakeApiServer;
using rdmak8s::testing::FakeApiServerOptions;

class KubeClientTest : public ::testing::Test {
 protected:
  void StartServer(FakeApiServerOptions options = {}) {
    server_ = std::make_unique<FakeApiServer>(std::move(options));
    ASSERT_TRUE(server_->Start(dir_.path() + "/api.sock"));
  }
  std::unique_ptr<CurlKubeClient> Client(KubeConfig config = {}) {
    config.server = server_->url();
    if (config.unix_socket.empty() && config.server.rfind("http://", 0) == 0) config.unix_socket = dir_.path() + "/api.sock";
    RetryPolicy retry;
    retry.sleep = [this](std::chrono::milliseconds d) { waits_.push_back(d); };
    auto c = CurlKubeClient::Create(config, retry);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }
  rdmak8s::testing::TempDir dir_;
  std::unique_ptr<FakeApiServer> server_;
  std::vector<std::chrono::milliseconds> waits_;
};

TEST_F(KubeClientTest, GetsOverTheUnixSocket) {
  StartServer();
  auto client = Client();
  auto r = client->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("APIGroup"), std::string::npos);
}

TEST_F(KubeClientTest, RetriesTooManyRequestsHonouringRetryAfter) {
  StartServer();
  server_->FailNext(429, 2, "3");
  auto client = Client();
  auto r = client->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(waits_, (std::vector<std::chrono::milliseconds>{std::chrono::seconds(3), std::chrono::seconds(3)}));
}

TEST_F(KubeClientTest, BacksOffExponentiallyWithoutRetryAfterAndGivesUpNamingUrlAndStatus) {
  StartServer();
  server_->FailNext(503, 100);
  auto client = Client();
  auto r = client->Send({"GET", "/apis/resource.k8s.io/v1/resourceslices", ""});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("GET http://localhost/apis/resource.k8s.io/v1/resourceslices"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("HTTP 503"), std::string::npos);
  EXPECT_EQ(waits_, (std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(250), std::chrono::milliseconds(500),
                                                            std::chrono::milliseconds(1000), std::chrono::milliseconds(2000)}));
}

TEST_F(KubeClientTest, StopRetriesEndsABackoffWaitAndNothingIsRetriedAfterIt) {
  StartServer();
  server_->FailNext(503, 1000, "30");  // each wait 30 s: only StopRetries can end it
  KubeConfig config;
  config.server = server_->url();
  config.unix_socket = dir_.path() + "/api.sock";
  auto client = std::move(*CurlKubeClient::Create(config));  // real waits
  StatusOr<HttpResponse> in_backoff = InternalError("not sent");
  std::thread sender([&] { in_backoff = client->Send({"GET", "/apis/resource.k8s.io", ""}); });
  client->StopRetries();
  sender.join();
  ASSERT_FALSE(in_backoff.ok());
  EXPECT_EQ(in_backoff.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(in_backoff.status().message().find("retries stopped: shutting down"), std::string::npos)
      << in_backoff.status().message();
  EXPECT_NE(in_backoff.status().message().find("HTTP 503"), std::string::npos);

  auto after = client->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_FALSE(after.ok());
  EXPECT_NE(after.status().message().find("after 1 attempts"), std::string::npos)
      << after.status().message();
}

TEST_F(KubeClientTest, ReReadsTheTokenFileForEveryRequest) {
  FakeApiServerOptions o;
  o.token = "first";
  StartServer(o);
  const std::string token_file = dir_.path() + "/token";
  std::ofstream(token_file) << "first\n";
  KubeConfig c;
  c.token_file = token_file;
  auto client = Client(c);
  EXPECT_EQ(client->Send({"GET", "/apis/resource.k8s.io", ""})->status, 200);
  server_->SetToken("second");  // rotation: the server takes only the new token
  EXPECT_EQ(client->Send({"GET", "/apis/resource.k8s.io", ""})->status, 401);
  std::ofstream(token_file) << "second\n";
  EXPECT_EQ(client->Send({"GET", "/apis/resource.k8s.io", ""})->status, 200);
}

TEST_F(KubeClientTest, AMissingTokenFileIsAnErrorNamingIt) {
  StartServer();
  KubeConfig c;
  c.token_file = dir_.path() + "/absent";
  auto r = Client(c)->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(dir_.path() + "/absent"), std::string::npos);
}

// The token is read by the one safe reader on every request: a FIFO at the path is an error at
// once, not a request stuck waiting for a writer.
TEST_F(KubeClientTest, ATokenFileThatIsAFifoIsAnErrorNamingIt) {
  StartServer();
  KubeConfig c;
  c.token_file = dir_.path() + "/token.fifo";
  ASSERT_EQ(mkfifo(c.token_file.c_str(), 0600), 0);
  auto r = Client(c)->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("read token " + c.token_file + ": not a regular file"),
            std::string::npos)
      << r.status().message();
}

TEST_F(KubeClientTest, ApiErrorCarriesTheServersMessage) {
  StartServer();
  auto client = Client();
  HttpRequest req{"GET", "/apis/resource.k8s.io/v1/resourceslices/nope", ""};
  auto r = client->Send(req);
  ASSERT_TRUE(r.ok());
  Status s = ApiError(*client, req, *r);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "GET http://localhost/apis/resource.k8s.io/v1/resourceslices/nope: HTTP 404: "
                         "resourceslices.resource.k8s.io \"nope\" not found");
}

TEST_F(KubeClientTest, VerifiesTheServerAgainstTheConfiguredCa) {
  auto cert = rdmak8s::testing::MakeSelfSignedCertificate();
  FakeApiServerOptions o;
  o.tls_cert_pem = cert.cert_pem;
  o.tls_key_pem = cert.key_pem;
  StartServer(o);
  KubeConfig good;
  good.ca_pem = cert.cert_pem;
  auto ok = Client(good)->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);

  const std::string other_ca = dir_.path() + "/other-ca.crt";
  std::ofstream(other_ca) << rdmak8s::testing::MakeSelfSignedCertificate().cert_pem;
  KubeConfig bad;
  bad.ca_file = other_ca;
  auto fail = Client(bad)->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_FALSE(fail.ok());
  EXPECT_NE(fail.status().message().find("GET " + server_->url() + "/apis/resource.k8s.io"), std::string::npos)
      << fail.status().message();
  EXPECT_NE(fail.status().message().find("certificate"), std::string::npos) << fail.status().message();
}

// Issue 24 item 2: one caller's slow answer must not hold up another's request.

// A one-shot event a test waits for, bounded, instead of a sleep.
class Event {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(std::chrono::seconds bound) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Bounds that only a stalled client reaches: no assertion on how long anything takes.
constexpr std::chrono::seconds kBound{30};

TEST_F(KubeClientTest, AnotherCallersRequestIsAnsweredWhileOneWaitsOutARetryAfter) {
  StartServer();
  server_->FailNextFor("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/slow", 429, 1, "20");
  KubeConfig config;
  config.server = server_->url();
  config.unix_socket = dir_.path() + "/api.sock";
  Event in_backoff, release;
  RetryPolicy retry;
  retry.sleep = [&](std::chrono::milliseconds) {
    in_backoff.Set();
    release.WaitFor(kBound);
  };
  auto client = std::move(*CurlKubeClient::Create(config, retry));
  auto slow = std::async(std::launch::async, [&] {
    return client->Send({"GET", "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/slow", ""});
  });
  ASSERT_TRUE(in_backoff.WaitFor(kBound)) << "the first request never reached its backoff";
  auto other = std::async(std::launch::async, [&] { return client->Send({"GET", "/apis/resource.k8s.io", ""}); });
  const bool answered = other.wait_for(kBound) == std::future_status::ready;
  release.Set();
  ASSERT_TRUE(answered) << "a request waited for another caller's 429 backoff";
  auto r = other.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(slow.get().status().code(), StatusCode::kOk);  // its retry: the claim is 404, an answer
}

TEST_F(KubeClientTest, AnotherCallersRequestIsAnsweredWhileOneAnswerHangs) {
  StartServer();
  server_->HoldRequests("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/hung");
  auto client = Client();
  auto hung = std::async(std::launch::async, [&] {
    return client->Send({"GET", "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/hung", ""});
  });
  ASSERT_TRUE(server_->WaitForHeld(1, kBound)) << "the hung request never reached the server";
  auto other = std::async(std::launch::async, [&] { return client->Send({"GET", "/apis/resource.k8s.io", ""}); });
  const bool answered = other.wait_for(kBound) == std::future_status::ready;
  server_->ReleaseHeld();
  ASSERT_TRUE(answered) << "a request waited for another caller's hung answer";
  EXPECT_EQ(other.get()->status, 200);
  EXPECT_TRUE(hung.get().ok());
}

TEST_F(KubeClientTest, ARequestWithADeadlineEndsByItEvenWhenTheAnswerHangs) {
  StartServer();
  server_->HoldRequests("/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/hung");
  auto client = Client();
  HttpRequest req{"GET", "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/hung", ""};
  req.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  auto r = client->Send(req);
  server_->ReleaseHeld();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_NE(r.status().message().find("resourceclaims/hung"), std::string::npos) << r.status().message();
}

TEST_F(KubeClientTest, ARetryAfterPastTheDeadlineIsNotWaitedFor) {
  StartServer();
  server_->FailNext(429, 1, "20");
  auto client = Client();
  HttpRequest req{"GET", "/apis/resource.k8s.io", ""};
  req.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto r = client->Send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("20000 ms backoff ends past the caller's deadline"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("HTTP 429"), std::string::npos) << r.status().message();
  EXPECT_TRUE(waits_.empty());
}

// Issue 24 item 6: hostile answers are bounded.
TEST_F(KubeClientTest, AHugeRetryAfterWaitsTheLongestBackoffAndNeverOverflows) {
  StartServer();
  server_->FailNext(429, 2, "9223372036854775807");
  auto client = Client();
  auto r = client->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(waits_, (std::vector<std::chrono::milliseconds>{std::chrono::seconds(30), std::chrono::seconds(30)}));
  waits_.clear();
  server_->FailNext(429, 1, "99999999999999999999999");  // past int64
  ASSERT_TRUE(client->Send({"GET", "/apis/resource.k8s.io", ""}).ok());
  EXPECT_EQ(waits_, (std::vector<std::chrono::milliseconds>{std::chrono::seconds(30)}));
}

TEST_F(KubeClientTest, AnAnswerPastTheSizeCapIsAnErrorNamingTheCap) {
  StartServer();
  nlohmann::json claim = {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
                          {"metadata", {{"namespace", "ml"}, {"name", "big"}, {"uid", "u"},
                                        {"annotations", {{"a", std::string(200000, 'x')}}}}}};
  server_->AddClaim(claim);
  KubeConfig config;
  config.server = server_->url();
  config.unix_socket = dir_.path() + "/api.sock";
  auto client = std::move(*CurlKubeClient::Create(config, {}, 65536));
  auto r = client->Send({"GET", "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/big", ""});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("answer larger than the 65536 bytes"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("resourceclaims/big"), std::string::npos) << r.status().message();
  // The client goes on: a small answer after it.
  EXPECT_EQ(client->Send({"GET", "/apis/resource.k8s.io", ""})->status, 200);
}

TEST(PathSegmentTest, NoNameAddsASegmentAQueryOrAFragment) {
  EXPECT_EQ(PathSegment("train-nic.v2"), "train-nic.v2");
  EXPECT_EQ(PathSegment("../../../../api/v1/namespaces/kube-system/secrets/admin-token?x="),
            "..%2F..%2F..%2F..%2Fapi%2Fv1%2Fnamespaces%2Fkube-system%2Fsecrets%2Fadmin-token%3Fx%3D");
  EXPECT_EQ(PathSegment("x?watch=true&a#b"), "x%3Fwatch%3Dtrue%26a%23b");
  EXPECT_EQ(PathSegment(".."), "%2E%2E");
  EXPECT_EQ(PathSegment("."), "%2E");
  EXPECT_EQ(PathSegment(std::string("a\0b", 3)), "a%00b");
}

TEST(QueryValueTest, AQueryValueCannotEndTheParameterOrTheQuery) {
  EXPECT_EQ(QueryValue("spec.nodeName=node-1,spec.driver=rdma.rdmak8s.io"),
            "spec.nodeName%3Dnode-1%2Cspec.driver%3Drdma.rdmak8s.io");
  EXPECT_EQ(QueryValue("tok&watch=true#x y"), "tok%26watch%3Dtrue%23x%20y");
  EXPECT_EQ(QueryValue(".."), "..") << "a value is no path segment";
}

}  // namespace
}  // namespace rdmak8s::dra
