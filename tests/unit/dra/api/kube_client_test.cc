#include "dra/api/kube_client.h"

#include <fstream>
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

}  // namespace
}  // namespace rdmak8s::dra
