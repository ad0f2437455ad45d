// The DRA driver's own metrics and probes (dra/metrics.h): counts moved by real prepares over the
// plugin's unix-socket gRPC (the fake kubelet), the health gauge read from the catalog the health
// stream reads, API errors from the real kube client against the fake API server, and /livez,
// /readyz over real HTTP on a loopback port the kernel picks.
#include "dra/metrics.h"

#include <unistd.h>

#include <array>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "dra/api/kube_client.h"
#include "dra/kubelet/plugin.h"
#include "fakes/fake_api_server.h"
#include "support/loopback_http.h"
#include "unit/dra/kubelet/plugin_fixture.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using plugin_fixture::kDriver;
using plugin_fixture::kPool;

std::string HttpGet(int port, const std::string& path) { return testing::HttpRequest(port, path); }
using testing::Body;
using testing::StatusLine;

// The value of the sample of `name` whose labels contain every one of `labels` ("k=\"v\""), as
// text; "absent" when there is none.
std::string Sample(const std::string& text, const std::string& name,
                   const std::vector<std::string>& labels = {}) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char after = line.size() > name.size() ? line[name.size()] : '\0';
    if (after != '{' && after != ' ') continue;
    bool all = true;
    for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) return line.substr(line.rfind(' ') + 1);
  }
  return "absent";
}

class DraMetricsTest : public plugin_fixture::PluginFixture {
 protected:
  void SetUp() override { StartPlugin(&metrics_); }
  void TearDown() override {
    plugin_.reset();  // it reports to metrics_, which goes first
    metrics_.Stop();
  }

  DraMetrics metrics_{&catalog_, /*slices_expected=*/true};
};

TEST_F(DraMetricsTest, PreparesAndUnpreparesAreCountedByResultWithTheirLatency) {
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  EXPECT_EQ(Sample(metrics_.Scrape(), "rdmak8s_dra_prepare_duration_seconds_count"), "0");

  // One claim prepares, one names a claim the API server does not have.
  auto prep = kubelet_.NodePrepareResources({{"team", "uid-1", "nic"}, {"team", "uid-2", "missing"}});
  ASSERT_TRUE(prep.ok()) << prep.status().message();
  ASSERT_EQ(prep->claims().at("uid-1").error(), "");
  ASSERT_NE(prep->claims().at("uid-2").error(), "");
  auto unprep = kubelet_.NodeUnprepareResources({{"team", "uid-1", "nic"}});
  ASSERT_TRUE(unprep.ok()) << unprep.status().message();

  const std::string text = metrics_.Scrape();
  EXPECT_EQ(Sample(text, "rdmak8s_dra_prepare_total", {"result=\"ok\""}), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_prepare_total", {"result=\"error\""}), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_unprepare_total", {"result=\"ok\""}), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_unprepare_total", {"result=\"error\""}), "absent") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_prepare_duration_seconds_count"), "2") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_prepare_duration_seconds_bucket", {"le=\"+Inf\""}), "2") << text;
}

TEST_F(DraMetricsTest, DeviceHealthGaugeFollowsWhatTheDriverTellsKubelet) {
  const std::vector<std::string> ours = {"pool=\"node-a\"", "device=\"mlx5-0\"", "rdma_dev=\"mlx5_0\""};
  EXPECT_EQ(Sample(metrics_.Scrape(), "rdmak8s_dra_device_healthy", ours), "1");
  SetHealth(false);
  EXPECT_EQ(Sample(metrics_.Scrape(), "rdmak8s_dra_device_healthy", ours), "0");
  // What the health stream sends kubelet for the same catalog.
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  ASSERT_TRUE(kubelet_
                  .WaitForHealth([](const auto& m) {
                    return m.devices_size() == 1 && m.devices(0).health() == v1alpha1::UNHEALTHY;
                  }, std::chrono::seconds(10))
                  .has_value());
  SetHealth(true);
  EXPECT_EQ(Sample(metrics_.Scrape(), "rdmak8s_dra_device_healthy", ours), "1");
}

TEST_F(DraMetricsTest, PublishesSetTheSliceCountsAndFailuresAreCountedApart) {
  metrics_.ObservePublish(true, 2, 130);
  metrics_.ObservePublish(false, 0, 0);
  const std::string text = metrics_.Scrape();
  EXPECT_EQ(Sample(text, "rdmak8s_dra_slices_published_total"), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_slice_publish_errors_total"), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_published_slices"), "2") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_published_devices"), "130") << text;
}

TEST_F(DraMetricsTest, TaintedAndHeldDevicesAreGaugesAndTheirChangesAndWritesCount) {
  metrics_.ObserveSliceHealth({.tainted_devices = 1, .held_devices = 0, .changes_published = 2,
                               .changes_held = 0, .slice_writes = 3});
  metrics_.ObserveSliceHealth({.tainted_devices = 0, .held_devices = 1, .changes_published = 4,
                               .changes_held = 5, .slice_writes = 7});
  const std::string text = metrics_.Scrape();
  EXPECT_EQ(Sample(text, "rdmak8s_dra_tainted_devices"), "0") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_devices_health_held"), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_device_health_changes_total", {"result=\"published\""}), "4") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_device_health_changes_total", {"result=\"held\""}), "5") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_slice_writes_total"), "7") << text;
}

TEST_F(DraMetricsTest, ReadyzWaitsForKubeletsVerdictAndAPublishAndDropsWhenTheSocketIsServedAgain) {
  ASSERT_TRUE(metrics_.Serve("127.0.0.1:0").ok());
  const int port = metrics_.port();
  ASSERT_GT(port, 0);
  std::string r = HttpGet(port, "/readyz");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(Body(r), "not registered with kubelet\n");
  EXPECT_EQ(StatusLine(HttpGet(port, "/livez")), "HTTP/1.1 200 OK");
  // /healthz is /readyz, as the device plugin's (node/agent_http.h: one set of paths).
  EXPECT_EQ(Body(HttpGet(port, "/healthz")), "not registered with kubelet\n");

  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  r = HttpGet(port, "/readyz");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(Body(r), "ResourceSlices not published yet\n");
  EXPECT_EQ(Sample(metrics_.Scrape(), "rdmak8s_ready"), "0");

  metrics_.ObservePublish(true, 1, 1);
  r = HttpGet(port, "/readyz");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 200 OK");
  EXPECT_EQ(Body(r), "ok\n");
  EXPECT_EQ(Sample(metrics_.Scrape(), "rdmak8s_ready"), "1");

  // A kubelet restart removed the registration socket: served again, not registered until the
  // new kubelet says so.
  fs::remove(plugin_->registration_socket());
  auto again = plugin_->ServeRegistrationAgain();
  ASSERT_TRUE(again.ok() && *again);
  EXPECT_EQ(Body(HttpGet(port, "/readyz")), "not registered with kubelet\n");
  fake::FakeDraKubelet next;
  ASSERT_TRUE(next.Register(plugin_->registration_socket()).ok());
  EXPECT_EQ(StatusLine(HttpGet(port, "/readyz")), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(HttpGet(port, "/nothing")), "HTTP/1.1 404 Not Found");
}

TEST_F(DraMetricsTest, ALoopPastItsStallBoundFailsLivezAndReadyzNamingIt) {
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  metrics_.ObservePublish(true, 1, 1);
  metrics_.Heartbeat("device watch loop", std::chrono::minutes(5));
  EXPECT_EQ(metrics_.NotLive(), "");
  EXPECT_EQ(metrics_.Unready(), "");
  // A bound already passed at the beat: stalled from then on.
  metrics_.Heartbeat("device watch loop", std::chrono::seconds(-1));
  EXPECT_EQ(metrics_.NotLive().rfind("device watch loop stalled: no wakeup for ", 0), 0u) << metrics_.NotLive();
  EXPECT_EQ(metrics_.Unready(), metrics_.NotLive());
}

TEST(DraMetricsWithoutApiServerTest, ReadyOnceRegisteredSinceNoSliceIsEverPublished) {
  DeviceCatalog catalog{kPool};
  DraMetrics metrics(&catalog, /*slices_expected=*/false);
  EXPECT_EQ(metrics.Unready(), "not registered with kubelet");
  metrics.SetRegistered(true);
  EXPECT_EQ(metrics.Unready(), "");
}

TEST(DraMetricsApiTest, EveryErrorAnswerOfTheKubeClientIsCountedByVerbAndCode) {
  testing::TempDir dir;
  rdmak8s::testing::FakeApiServer server;
  ASSERT_TRUE(server.Start(dir.path() + "/api.sock"));
  KubeConfig config;
  config.server = server.url();
  config.unix_socket = dir.path() + "/api.sock";
  RetryPolicy retry;
  retry.sleep = [](std::chrono::milliseconds) {};
  auto client = CurlKubeClient::Create(config, retry);
  ASSERT_TRUE(client.ok()) << client.status().message();
  DeviceCatalog catalog{kPool};
  DraMetrics metrics(&catalog, true);
  (*client)->SetErrorObserver(
      [&metrics](std::string_view verb, std::string_view code) { metrics.CountApiError(verb, code); });

  server.FailNext(503, 2);  // retried: two error answers, then the real one
  auto got = (*client)->Send({"GET", "/apis/resource.k8s.io", ""});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->status, 200);
  auto missing = (*client)->Send({"DELETE", "/apis/resource.k8s.io/v1/resourceslices/nothing", ""});
  ASSERT_TRUE(missing.ok()) << missing.status().message();
  EXPECT_EQ(missing->status, 404);
  server.Stop();
  EXPECT_FALSE((*client)->Send({"PUT", "/apis/resource.k8s.io/v1/resourceslices/x", "{}"}).ok());

  const std::string text = metrics.Scrape();
  EXPECT_EQ(Sample(text, "rdmak8s_dra_api_errors_total", {"verb=\"GET\"", "code=\"503\""}), "2") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_api_errors_total", {"verb=\"DELETE\"", "code=\"404\""}), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_api_errors_total", {"verb=\"PUT\"", "code=\"none\""}), "1") << text;
  EXPECT_EQ(Sample(text, "rdmak8s_dra_api_errors_total", {"verb=\"GET\"", "code=\"200\""}), "absent") << text;
}

}  // namespace
}  // namespace rdmak8s::dra
