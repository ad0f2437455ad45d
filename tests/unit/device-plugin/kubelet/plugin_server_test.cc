// PoolServer and RegisterWithKubelet against the fake kubelet, over real unix-socket gRPC.
#include "device-plugin/kubelet/plugin_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "device-plugin/kubelet/pool_registration.h"
#include "support/fake_kubelet.h"
#include "support/log_capture.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dp {
namespace {

using namespace testdev;
using namespace std::chrono_literals;
using fake::FakeKubelet;

class PluginServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::shared_ptr<PoolState> State(PoolMode mode) {
    auto s = std::make_shared<PoolState>();
    s->resource = "rdma/p";
    s->pool.name = "p";
    s->pool.mode = mode;
    s->pool.capacity = 2;
    s->devices["mlx5_0"] = {Ib("mlx5_0", 0, "0000:3b:00.0", 0), {true, ""}};
    s->devices["mlx5_1"] = {Ib("mlx5_1", 1, "0000:3c:00.0", 1), {true, ""}};
    FillIds(*s);
    return s;
  }

  std::string dir_;
};

TEST_F(PluginServerTest, RegisterBeforeServingIsRefusedByKubelet) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  Status s = RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dial " + dir_ + "/p.sock"), std::string::npos) << s.message();
}

TEST_F(PluginServerTest, ServeThenRegisterStreamsDevicesAndUpdates) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  PoolServer server({dir_ + "/p.sock", false, {}}, State(PoolMode::kShared));
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  ASSERT_EQ(kubelet.Registrations().size(), 1u);
  EXPECT_EQ(kubelet.Registrations()[0].version(), "v1beta1");
  EXPECT_EQ(kubelet.Registrations()[0].endpoint(), "p.sock");
  EXPECT_TRUE(kubelet.Registrations()[0].options().get_preferred_allocation_available());
  auto first = kubelet.WaitForDevices(
      "rdma/p", [](const auto& r) { return r.devices_size() == 4; }, 5s);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->devices(2).id(), "mlx5_1-0");
  EXPECT_EQ(first->devices(2).topology().nodes(0).id(), 1);

  auto next = State(PoolMode::kShared);
  next->devices["mlx5_1"].health = {false, "port 1 state DOWN"};
  server.Publish(next, /*notify=*/true);
  auto updated = kubelet.WaitForDevices(
      "rdma/p", [](const auto& r) { return r.devices_size() == 4 && r.devices(3).health() == "Unhealthy"; },
      5s);
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ(updated->devices(0).health(), "Healthy");
}

TEST_F(PluginServerTest, PublishWithoutNotifySendsNothing) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  PoolServer server({dir_ + "/p.sock", false, {}}, State(PoolMode::kExclusive));
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  ASSERT_TRUE(kubelet.WaitForDevices("rdma/p", [](const auto&) { return true; }, 5s));
  server.Publish(State(PoolMode::kExclusive), /*notify=*/false);
  server.Publish(State(PoolMode::kShared), /*notify=*/true);
  ASSERT_TRUE(kubelet.WaitForDevices("rdma/p", [](const auto& r) { return r.devices_size() == 4; }, 5s));
  EXPECT_EQ(kubelet.UpdateCount("rdma/p"), 2u);
}

TEST_F(PluginServerTest, AllocateAndPreferredAllocationOverGrpc) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  std::vector<std::string> allocated;
  ServerHooks hooks;
  hooks.on_allocate = [&](const std::string&, const std::vector<std::string>& ids,
                          const std::vector<std::string>&, const std::string& err) {
    if (err.empty()) allocated.insert(allocated.end(), ids.begin(), ids.end());
  };
  PoolServer server({dir_ + "/p.sock", false, hooks}, State(PoolMode::kExclusive));
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());

  auto resp = kubelet.Allocate("rdma/p", {{"0000:3c:00.0"}, {"0000:3b:00.0"}});
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  ASSERT_EQ(resp->container_responses_size(), 2);
  EXPECT_EQ(resp->container_responses(0).envs().at("RDMAK8S_P_DEVICES"), "mlx5_1");
  EXPECT_EQ(resp->container_responses(1).devices(0).container_path(), "/dev/infiniband/uverbs0");
  EXPECT_EQ(allocated, (std::vector<std::string>{"0000:3c:00.0", "0000:3b:00.0"}));

  auto bad = kubelet.Allocate("rdma/p", {{"mlx5_7"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("unknown device ID \"mlx5_7\""), std::string::npos);

  auto pref = kubelet.GetPreferredAllocation("rdma/p", {"0000:3b:00.0", "0000:3c:00.0"}, {"0000:3c:00.0"}, 1);
  ASSERT_TRUE(pref.ok());
  ASSERT_EQ(pref->container_responses_size(), 1);
  EXPECT_EQ(pref->container_responses(0).deviceids(0), "0000:3c:00.0");
  EXPECT_TRUE(kubelet.PreStartContainer("rdma/p", {"0000:3b:00.0"}).ok());
}

TEST_F(PluginServerTest, StopRemovesSocketAndNoticesReplacement) {
  PoolServer server({dir_ + "/p.sock", false, {}}, State(PoolMode::kExclusive));
  ASSERT_TRUE(server.Start().ok());
  EXPECT_TRUE(server.SocketPresent());
  server.Stop();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/p.sock"));

  ASSERT_TRUE(server.Start().ok());
  // kubelet deleted our socket: the server notices it is gone and can serve again.
  std::filesystem::remove(dir_ + "/p.sock");
  EXPECT_FALSE(server.SocketPresent());
  server.Stop();
  ASSERT_TRUE(server.Start().ok());
  EXPECT_TRUE(server.SocketPresent());
}

// kubelet calls GetDevicePluginOptions inside each Register, on the connection it dialled back
// on: the count per serving is what tells the kubelet link that kubelet reached this serving.
TEST_F(PluginServerTest, KubeletCallsAreCountedPerServing) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  PoolServer server({dir_ + "/p.sock", false, {}}, State(PoolMode::kShared));
  EXPECT_EQ(server.kubelet_calls(), (PoolServer::KubeletCalls{0, 0, 0})) << "never served";
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.kubelet_calls(), (PoolServer::KubeletCalls{1, 0, 0}));
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  ASSERT_TRUE(server.WaitForOpenStreams(1, 5s));
  EXPECT_EQ(server.kubelet_calls(), (PoolServer::KubeletCalls{1, 1, 1}));
  server.Stop();
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.kubelet_calls(), (PoolServer::KubeletCalls{2, 0, 0})) << "a new serving counts afresh";
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  ASSERT_TRUE(server.WaitForOpenStreams(1, 5s));
  EXPECT_EQ(server.kubelet_calls(), (PoolServer::KubeletCalls{2, 1, 1}));
}

// kubelet's Go client dials a new connection per Register: a Register after another server took
// our socket's path (a DaemonSet's next process) reaches that server, never the connection the
// previous Register left to the old one. The fake kubelet must do the same.
TEST_F(PluginServerTest, AKubeletDialAfterAnotherServerTookThePathReachesThatServer) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  PoolServer old_server({dir_ + "/p.sock", false, {}}, State(PoolMode::kShared));
  ASSERT_TRUE(old_server.Start().ok());
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  ASSERT_TRUE(old_server.WaitForOpenStreams(1, 5s));
  PoolServer next({dir_ + "/p.sock", false, {}}, State(PoolMode::kShared));
  ASSERT_TRUE(next.Start().ok());  // renamed over the old one's socket; the old one still serves
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  EXPECT_EQ(next.kubelet_calls().dial_backs, 1u);
  EXPECT_EQ(old_server.kubelet_calls().dial_backs, 1u);
}

TEST_F(PluginServerTest, PreferredAllocationDebugLogNamesTheChosenIds) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  PoolServer server({dir_ + "/p.sock", false, {}}, State(PoolMode::kExclusive));
  ASSERT_TRUE(server.Start().ok());
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  testing::LogCapture log;
  auto pref = kubelet.GetPreferredAllocation("rdma/p", {"0000:3b:00.0", "0000:3c:00.0"}, {}, 1);
  ASSERT_TRUE(pref.ok()) << pref.status().ToString();
  ASSERT_EQ(pref->container_responses(0).deviceids_size(), 1);
  const std::string chosen = pref->container_responses(0).deviceids(0);
  EXPECT_NE(log.Text().find("D preferred rdma/p: size 1 must [] -> [" + chosen + "]"), std::string::npos)
      << log.Text();
}

// A kubelet starting removes every socket in its directory (a list, then a remove each). A
// plugin that binds its private name while that sweep runs can lose it before the rename:
// it binds again under a new name, and serves.
TEST_F(PluginServerTest, PrivateNameSweptBeforeItsRenameIsBoundAgain) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  std::vector<std::string> swept;
  ServerHooks hooks;
  hooks.before_rename = [&](const std::string& staging) {
    if (swept.size() < 2 && unlink(staging.c_str()) == 0) swept.push_back(staging);
  };
  PoolServer server({dir_ + "/p.sock", false, hooks}, State(PoolMode::kExclusive));
  Status s = server.Start();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(swept.size(), 2u);
  EXPECT_NE(swept[0], swept[1]) << "bound again under the same private name";
  EXPECT_TRUE(server.SocketPresent());
  ASSERT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  EXPECT_TRUE(kubelet.WaitForDevices("rdma/p", [](const auto& r) { return r.devices_size() == 2; },
                                     5s));
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind(".rdmak8s.", 0), std::string::npos)
        << "private name left behind: " << e.path();
  }
}

// A sweep that never ends (something removing every socket as it appears) is an error that says
// so, with nothing left behind.
TEST_F(PluginServerTest, PrivateNameSweptEveryTimeIsAnErrorNamingTheSweep) {
  ServerHooks hooks;
  int attempts = 0;
  hooks.before_rename = [&](const std::string& staging) {
    attempts++;
    unlink(staging.c_str());
  };
  PoolServer server({dir_ + "/p.sock", false, hooks}, State(PoolMode::kExclusive));
  Status s = server.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(attempts, 5);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("serve " + dir_ + "/p.sock"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("removed 5 times before it could be renamed"), std::string::npos)
      << s.message();
  EXPECT_FALSE(server.serving());
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

// A DaemonSet rolling update: the new process serves on the same path while the old one is
// still shutting down. The old one must not take the new one's socket with it.
TEST_F(PluginServerTest, StopLeavesASocketThatReplacedOurs) {
  const std::string path = dir_ + "/p.sock";
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  PoolServer old_server({path, false, {}}, State(PoolMode::kExclusive));
  ASSERT_TRUE(old_server.Start().ok());
  PoolServer new_server({path, false, {}}, State(PoolMode::kExclusive));
  ASSERT_TRUE(new_server.Start().ok());
  EXPECT_FALSE(old_server.SocketPresent());
  EXPECT_TRUE(new_server.SocketPresent());
  old_server.Stop();
  EXPECT_TRUE(new_server.SocketPresent()) << "the old server removed the new server's socket";
  EXPECT_TRUE(RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms).ok());
  new_server.Stop();
  EXPECT_FALSE(std::filesystem::exists(path));
}

// A kubelet that is starting: kubelet.sock exists, but the first connections fail (a connect
// landing between bind and listen is refused). Here a listener accepts and drops the first
// three connections, then the fake kubelet starts (clearing the directory, so the plugin
// serves again, as the daemon does). gRPC's default backoff
// (1 s, then 1.6 s, 2.56 s, +-20%) could not get through three failures within the 2 s
// deadline; the registration channel's fast first retries do.
TEST_F(PluginServerTest, RegisterRetriesQuicklyAfterFailedConnects) {
  FakeKubelet kubelet(dir_);
  PoolServer server({dir_ + "/p.sock", false, {}}, State(PoolMode::kExclusive));
  ASSERT_TRUE(server.Start().ok());
  int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(lfd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, kubelet.socket_path().c_str());
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(lfd, 16), 0);
  std::atomic<int> dropped{0};
  std::atomic<bool> gave_up{false};
  std::thread kubelet_starting([&] {
    while (dropped < 3 && !gave_up) {
      pollfd pfd{lfd, POLLIN, 0};
      if (poll(&pfd, 1, 50) <= 0) continue;
      int c = accept(lfd, nullptr, nullptr);
      if (c < 0) break;
      close(c);
      ++dropped;
    }
    close(lfd);
    if (gave_up) return;
    (void)kubelet.Start().ok();  // clears the directory, our socket too: serve again
    server.Stop();
    (void)server.Start().ok();
  });
  Status s = RegisterWithKubelet(kubelet.socket_path(), "p.sock", "rdma/p", 2000ms);
  gave_up = true;
  kubelet_starting.join();
  EXPECT_EQ(dropped, 3);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(kubelet.Registrations().size(), 1u);
}

TEST_F(PluginServerTest, PluginWatcherGetInfoThenKubeletDialsEndpoint) {
  FakeKubelet kubelet(dir_);  // plugin watcher side only: no kubelet.sock needed
  bool notified = false;
  ServerHooks hooks;
  hooks.on_watcher_status = [&](const std::string&, bool ok, const std::string&) { notified = ok; };
  PoolServer server({dir_ + "/reg.sock", true, hooks}, State(PoolMode::kExclusive));
  ASSERT_TRUE(server.Start().ok());
  auto info = kubelet.RegisterViaPluginWatcher(dir_ + "/reg.sock");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->type(), "DevicePlugin");
  EXPECT_EQ(info->name(), "rdma/p");
  EXPECT_EQ(info->endpoint(), dir_ + "/reg.sock");
  ASSERT_EQ(info->supported_versions_size(), 1);
  EXPECT_EQ(info->supported_versions(0), "v1beta1");
  EXPECT_TRUE(notified);
  EXPECT_TRUE(kubelet.WaitForDevices("rdma/p", [](const auto& r) { return r.devices_size() == 2; }, 5s));
}

}  // namespace
}  // namespace rdmak8s::dp
