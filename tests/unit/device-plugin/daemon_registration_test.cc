// Registration with kubelet and serving our sockets (kubelet/pool_registration.h, through the daemon):
// registering only once serving, surviving kubelet restarts and sockets removed, plugin-watcher
// mode, an unanswered kubelet.sock, and /healthz following registration.
#include <gtest/gtest.h>

#include "unit/device-plugin/daemon_fixture.h"

namespace rdmak8s::dp {
namespace {

using namespace daemon_test;

TEST_F(DaemonTest, ServesThenRegistersEachPoolAndAdvertisesTheFixture) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  // The fake kubelet dials back inside Register and refuses a plugin that is not serving yet.
  for (const auto& e : kubelet_->Events()) EXPECT_EQ(e.find("failed"), std::string::npos) << e;
  for (const auto& r : kubelet_->Registrations()) {
    EXPECT_EQ(r.version(), "v1beta1");
    EXPECT_TRUE(fs::exists(kubelet_dir_ + "/" + r.endpoint())) << r.endpoint();
  }
  auto vfs = WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; });
  ASSERT_TRUE(vfs);
  EXPECT_EQ(Ids(*vfs), (std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"}));
  ASSERT_EQ(vfs->devices(0).topology().nodes_size(), 1);
  EXPECT_EQ(vfs->devices(0).topology().nodes(0).id(), 1);
  auto pf = WaitFor("rdma/pf", [](const Resp& r) { return r.devices_size() == 4; });
  ASSERT_TRUE(pf);
  EXPECT_EQ(Ids(*pf), (std::vector<std::string>{"mlx5_0-0", "mlx5_0-1", "mlx5_3-0", "mlx5_3-1"}));
  EXPECT_EQ(HealthOf(*pf, "mlx5_0-0"), "Healthy");
}

TEST_F(DaemonTest, KubeletRestartDeletingSocketsIsSurvived) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 2, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 2, kWait));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  std::printf("re-registered both pools %lld ms after the kubelet restart\n",
              static_cast<long long>(ms.count()));
  // The new stream carries the full list again.
  EXPECT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; }));
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-vfs.sock"));
}

// A kubelet restart is routine: the new kubelet clears its directory (kubelet.sock and our
// sockets) and listens again. Nothing about it deserves a warning.
TEST_F(DaemonTest, KubeletRestartIsLoggedAtInfoAsAKubeletStarting) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  std::string log;
  {
    LogCapture capture;
    ASSERT_TRUE(kubelet_->Restart().ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
    log = capture.Text();
  }
  EXPECT_EQ(log.find("\nW "), std::string::npos) << log;
  EXPECT_NE(log.find("I kubelet.sock removed: a kubelet is starting"), std::string::npos) << log;
  EXPECT_EQ(log.find("kubelet stopped"), std::string::npos) << log;
}

// Our socket removed by anything but a kubelet restart (rm, an old plugin process shutting
// down): kubelet never dials a socket that is gone, so serving again is not enough.
TEST_F(DaemonTest, RemovedSocketIsServedAndRegisteredAgain) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  ASSERT_TRUE(fs::remove(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  EXPECT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
}

// The plugin starting while a kubelet starts: the kubelet's sweep of its directory removes the
// plugin's private socket name between bind and rename. The plugin binds again and registers;
// it does not exit.
TEST_F(DaemonTest, StartingWhileAKubeletSweepsItsDirectoryStillServesAndRegisters) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  std::atomic<int> swept{0};
  before_socket_rename_ = [&swept](const std::string& staging) {
    if (swept.load() == 0 && unlink(staging.c_str()) == 0) swept++;
  };
  Status s = StartDaemon();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(swept.load(), 1);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
}

// Serving again after our socket was removed can fail (the directory swept on every attempt):
// the loop tries again on its own, since no other event would bring the socket back, and
// registers once it serves.
TEST_F(DaemonTest, SocketThatCouldNotBeServedAgainIsRetriedThenRegistered) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  std::atomic<bool> sweeping{false};
  std::atomic<int> swept{0};
  before_socket_rename_ = [&](const std::string& staging) {
    if (sweeping.load() && unlink(staging.c_str()) == 0 && ++swept == 5) sweeping = false;
  };
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  LogCapture log;
  sweeping = true;
  ASSERT_TRUE(fs::remove(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait)) << log.Text();
  EXPECT_EQ(swept.load(), 5);
  EXPECT_NE(log.Text().find("E re-serve rdma/p: serve " + kubelet_dir_ + "/rdmak8s-rdma-p.sock"),
            std::string::npos) << log.Text();
  EXPECT_NE(log.Text().find("retrying in 1s"), std::string::npos) << log.Text();
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
}

// A DaemonSet rolling update: the new process serves and registers while the old one is still
// shutting down on the same directory. The old one stopping must not delete the new socket.
TEST_F(DaemonTest, AnOldInstanceStoppingLeavesTheNewInstancesSocket) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));

  DaemonDeps deps;
  deps.sources.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{root_ + "/sys", nullptr});
  deps.netns_mode = []() -> StatusOr<RdmaNetnsMode> { return RdmaNetnsMode::kExclusive; };
  Daemon next(options_, std::move(deps));
  ASSERT_TRUE(next.Start().ok());
  Status next_status;
  std::thread next_thread([&] { next_status = next.Run(); });
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));

  const std::string name = "rdmak8s-rdma-p.sock";
  int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(ifd, 0);
  ASSERT_GE(inotify_add_watch(ifd, kubelet_dir_.c_str(), IN_DELETE | IN_MOVED_FROM), 0);
  StopDaemon();  // the old instance
  EXPECT_TRUE(run_status_.ok());
  alignas(inotify_event) char buf[4096];
  std::vector<std::string> removed;
  for (ssize_t n; (n = read(ifd, buf, sizeof(buf))) > 0;) {
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      if (ev->len != 0) removed.push_back(ev->name);
      p += sizeof(inotify_event) + ev->len;
    }
  }
  close(ifd);
  EXPECT_EQ(std::count(removed.begin(), removed.end(), name), 0) << "the old instance removed it";
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/" + name));
  // kubelet v1.36 tracks a plugin by resource name: the old instance's stream ending makes it
  // disconnect whichever connection has the name now, the new instance's (the fake does the
  // same). The new instance sees its stream gone and registers again.
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 3, kStreamLost)) << "not registered again";
  ASSERT_TRUE(kubelet_->WaitForHealthy("rdma/p", 1, {"rxe0"}, kWait));
  auto alloc = kubelet_->Allocate("rdma/p", {{"rxe0"}});
  EXPECT_TRUE(alloc.ok()) << alloc.status().ToString();

  next.Stop();
  next_thread.join();
  EXPECT_TRUE(next_status.ok());
  EXPECT_FALSE(fs::exists(kubelet_dir_ + "/" + name));
}

// Against kubelet v1.36.2 a second Register for a pool (the race of a kubelet restart: our
// socket served again registers with the new kubelet, then its kubelet.sock event registers
// again) made kubelet end the first stream, close the second connection and keep the pool at 0
// allocatable, for good, while /readyz said ok. The fake kubelet does what kubelet did; the
// plugin must see that its stream is gone and register again.
TEST_F(DaemonTest, APoolKubeletDroppedAfterASecondRegisterIsRegisteredAgain) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  ASSERT_TRUE(kubelet_->WaitForHealthy("rdma/p", 1, {"rxe0"}, kWait));

  Status again = RegisterWithKubelet(kubelet_->socket_path(), "rdmak8s-rdma-p.sock", "rdma/p", 3000ms);
  ASSERT_TRUE(again.ok()) << again.ToString();
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 3, kStreamLost)) << "never registered again";
  auto events = kubelet_->Events();
  EXPECT_NE(std::find(events.begin(), events.end(), "disconnect rdma/p"), events.end())
      << "the fake kubelet did not drop the pool as kubelet does";
  ASSERT_TRUE(kubelet_->WaitForHealthy("rdma/p", 1, {"rxe0"}, kWait));
  auto alloc = kubelet_->Allocate("rdma/p", {{"rxe0"}});
  EXPECT_TRUE(alloc.ok()) << alloc.status().ToString();
}

// kubelet restarts, one after another: each new kubelet gets one Register per pool (a second
// would drop the pool to 0 on kubelet v1.36), and every pool streams Healthy devices after each.
TEST_F(DaemonTest, EachKubeletRestartRegistersEveryPoolOnce) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  for (size_t restart = 1; restart <= 5; ++restart) {
    ASSERT_TRUE(kubelet_->Restart().ok());
    for (const char* res : {"rdma/vfs", "rdma/pf"}) {
      ASSERT_TRUE(kubelet_->WaitForRegistrations(res, restart + 1, kWait)) << res << " restart " << restart;
      EXPECT_TRUE(kubelet_->WaitForHealthy(res, 2, {}, kWait)) << res << " restart " << restart;
    }
  }
  for (const auto& e : kubelet_->Events()) EXPECT_EQ(e.find("disconnect"), std::string::npos) << e;
}

// Register calls kubelet received for `resource`, accepted or not, once it accepted `accepted`.
size_t RegistersOnceAccepted(const FakeKubelet& kubelet, const std::string& resource, size_t accepted) {
  if (!kubelet.WaitForRegistrations(resource, accepted, kWait)) return 0;
  auto all = kubelet.Registrations();
  return static_cast<size_t>(std::count_if(all.begin(), all.end(), [&](const v1beta1::RegisterRequest& r) {
    return r.resource_name() == resource;
  }));
}

// The bound of the slow-kubelet tests below (300 ms Register deadlines). On a loaded machine a
// Register can miss its deadline before kubelet's server hands it to a handler: gRPC drops it
// unserved (a Register kubelet never saw), no dial-back comes, and the plugin registers again once
// its dial-back wait has passed (PoolRegistrations' dial_back_wait, 15 s). Each pool is still
// registered once; the bound covers that path too (seen once in a make test's TSan stage: the
// fake received one Register of two).
constexpr auto kSlowKubeletWait = 15s + kWait;

// kubelet v1.36.2 under CPU burners: its call back to the plugin (inside Register) came after the
// plugin's Register deadline, and it accepted the Register all the same. Sending another then
// gives kubelet two registrations for one pool (it drops the pool to 0). Each pool is registered
// once, and full.
TEST_F(DaemonTest, ASlowKubeletWhoseDialBackOutlastsTheRegisterDeadlineGetsOneRegisterPerPool) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  register_timeout_ = 300ms;
  kubelet_->SetRegisterDelays(/*before_dial_back=*/1000ms, /*before_reply=*/0ms);
  ASSERT_TRUE(StartDaemon().ok());
  for (const char* res : {"rdma/vfs", "rdma/pf"}) {
    EXPECT_TRUE(kubelet_->WaitForHealthy(res, 2, {}, kSlowKubeletWait)) << res;
  }
  ASSERT_TRUE(WaitUntilReady(kSlowKubeletWait)) << metrics_->Unready();
  for (const char* res : {"rdma/vfs", "rdma/pf"}) {
    EXPECT_EQ(RegistersOnceAccepted(*kubelet_, res, 1), 1u) << res;
    EXPECT_EQ(kubelet_->DoubleRegistrations(res), 0u) << res;
  }
  for (const auto& e : kubelet_->Events()) EXPECT_EQ(e.find("disconnect"), std::string::npos) << e;
}

// The same when the answer is what is slow: kubelet dialled back at once, its reply came late.
TEST_F(DaemonTest, ASlowKubeletWhoseReplyOutlastsTheRegisterDeadlineGetsOneRegisterPerPool) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  register_timeout_ = 300ms;
  kubelet_->SetRegisterDelays(/*before_dial_back=*/0ms, /*before_reply=*/1000ms);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitUntilReady(kSlowKubeletWait)) << metrics_->Unready();
  for (const char* res : {"rdma/vfs", "rdma/pf"}) {
    EXPECT_TRUE(kubelet_->WaitForHealthy(res, 2, {}, kSlowKubeletWait)) << res;
    EXPECT_EQ(RegistersOnceAccepted(*kubelet_, res, 1), 1u) << res;
    EXPECT_EQ(kubelet_->DoubleRegistrations(res), 0u) << res;
  }
}

// What kubelet v1.36.2 showed twice in 144 restarts: kubelet down (its kubelet.sock left, refusing)
// longer than the stream wait, then a slow one starting. The stream wait must not send a Register
// while no kubelet listens (it would reach the next kubelet with a deadline the slow one
// outlasts, and be sent again): the next kubelet gets one Register per pool.
TEST_F(DaemonTest, AKubeletDownPastTheStreamWaitThenSlowToStartGetsOneRegisterPerPool) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  register_timeout_ = 300ms;
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForHealthy("rdma/p", 1, {"rxe0"}, kSlowKubeletWait));
  LogCapture log;
  kubelet_->Stop();
  // The stream wait ran out while kubelet was down.
  bool waited = false;
  for (auto until = std::chrono::steady_clock::now() + kStreamLost;
       !waited && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(20ms)) {
    waited = log.Text().find("holds no ListAndWatch stream of rdma/p") != std::string::npos;
  }
  ASSERT_TRUE(waited) << log.Text();
  kubelet_->SetRegisterDelays(/*before_dial_back=*/1000ms, /*before_reply=*/0ms);
  ASSERT_TRUE(kubelet_->Start().ok());
  ASSERT_TRUE(kubelet_->WaitForHealthy("rdma/p", 1, {"rxe0"}, kSlowKubeletWait));
  ASSERT_TRUE(WaitUntilReady(kSlowKubeletWait)) << metrics_->Unready() << log.Text();
  EXPECT_EQ(RegistersOnceAccepted(*kubelet_, "rdma/p", 2), 2u) << "one per kubelet start\n" << log.Text();
  EXPECT_EQ(kubelet_->DoubleRegistrations("rdma/p"), 0u) << log.Text();
}

TEST_F(DaemonTest, ConfigInTheKubeletDirDoesNotHideKubeletRestarts) {
  UseFixture("rxe_veth");
  // One directory watched twice (the sockets' watch and the config's): neither hides the
  // other's events.
  std::string cfg = kubelet_dir_ + "/config.json";
  WriteFile(cfg, R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(kubelet_->Start().ok());
  options_.config_path = cfg;
  DaemonDeps deps;
  deps.sources.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{root_ + "/sys", nullptr});
  options_.kubelet_dir = kubelet_dir_;
  options_.plugins_registry_dir = root_ + "/registry";
  options_.sysfs_root = root_ + "/sys";
  daemon_ = std::make_unique<Daemon>(options_, std::move(deps));
  ASSERT_TRUE(daemon_->Start().ok());
  thread_ = std::thread([this] { run_status_ = daemon_->Run(); });
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  EXPECT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"rxe0"}; }));
  // And the config is still watched.
  WriteFile(kubelet_dir_ + "/.tmp", R"({"pools": [{"name": "q", "mode": "exclusive", "selectors": {}}]})");
  fs::rename(kubelet_dir_ + "/.tmp", cfg);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/q", 1, kWait));
}

// A kubelet.sock nobody answers on: bound and listening but never accepting (kubelet starting),
// or a stale file (kubelet died). Registering then waits for the whole timeout (a minute here);
// meanwhile the event loop must go on handling health changes and stopping.
class DaemonStaleKubeletTest : public DaemonTest, public ::testing::WithParamInterface<bool> {};

TEST_P(DaemonStaleKubeletTest, UnansweredKubeletSocketDoesNotStallTheEventLoop) {
  const bool listening = GetParam();
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = kubelet_dir_ + "/kubelet.sock";
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  if (listening) {
    ASSERT_EQ(listen(fd, 16), 0);
  } else {
    close(fd);  // the file stays: connecting is refused
    fd = -1;
  }
  register_timeout_ = 60000ms;
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());

  // A health change is published while Register still waits on kubelet.sock.
  WriteFile(sys("class/net/veth0/operstate"), "down\n");
  links_->Inject("veth0", false);
  const std::string unhealthy = "rdmak8s_pool_devices{health=\"Unhealthy\",resource=\"rdma/p\"} 1\n";
  std::string text = ScrapeWhen(unhealthy);
  EXPECT_NE(text.find(unhealthy), std::string::npos) << text;
  EXPECT_EQ(metrics_->Unready(), "not registered with kubelet: rdma/p");

  // Stopping (what SIGTERM does) does not wait for the registration either.
  auto stopped = std::async(std::launch::async, [this] {
    daemon_->Stop();
    thread_.join();
  });
  ASSERT_EQ(stopped.wait_for(kWait), std::future_status::ready) << "Run() did not return";
  EXPECT_TRUE(run_status_.ok());
  EXPECT_FALSE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  if (fd >= 0) close(fd);
}

INSTANTIATE_TEST_SUITE_P(Kubelet, DaemonStaleKubeletTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "BoundNotAccepting" : "StaleSocketFile");
                         });

// kubelet's directory removed and made again (a node reset, a hostPath volume re-created): the
// socket watch follows the new directory, so the kubelet that starts in it, and every restart
// after, still has every pool registered with it.
TEST_F(DaemonTest, AKubeletDirectoryRemovedAndMadeAgainIsStillWatched) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  kubelet_->Stop();
  // Renamed away, then removed: the daemon serves again on every event, and would race a
  // remove_all of the directory in place ("Directory not empty").
  fs::rename(kubelet_dir_, kubelet_dir_ + ".old");
  fs::remove_all(kubelet_dir_ + ".old");
  fs::create_directories(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  // Seen only through the new directory's watch: kubelet's sweep removes our socket.
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 3, kWait));
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  EXPECT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"rxe0"}; }));
}

TEST_F(DaemonTest, RegistersWhenKubeletComesUpLater) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());
  EXPECT_TRUE(kubelet_->Registrations().empty());
  ASSERT_TRUE(kubelet_->Start().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
}

TEST_F(DaemonTest, StopRemovesOwnSocketsOnly) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  StopDaemon();
  EXPECT_TRUE(run_status_.ok());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(kubelet_dir_)) left.push_back(e.path().filename());
  EXPECT_EQ(left, std::vector<std::string>{"kubelet.sock"});
}

TEST_F(DaemonTest, PluginWatcherModeIsChosenWhenOnlyTheRegistryExistsAndKubeletDialsBack) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  fs::create_directories(root_ + "/registry");
  kubelet_dir_ = root_ + "/no-kubelet-dir";  // absent: auto picks the plugin watcher
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());
  EXPECT_EQ(daemon_->registration_mode(), RegistrationMode::kPluginWatcher);
  std::string sock = daemon_->SocketPath("rdma/p");
  EXPECT_EQ(sock, root_ + "/registry/rdmak8s-rdma-p.sock");
  auto info = kubelet_->RegisterViaPluginWatcher(sock);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->name(), "rdma/p");
  EXPECT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"rxe0"}; }));
}

TEST_F(DaemonTest, HealthzAnswers503UntilEveryPoolIsRegisteredWithKubeletThen200) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "selectors": {}}]})");
  ASSERT_TRUE(metrics_->Serve("127.0.0.1:0").ok());
  int port = metrics_->port();
  ASSERT_GT(port, 0);
  std::string before = HttpGet(port, "/healthz");
  EXPECT_EQ(before.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << before;
  EXPECT_EQ(Body(before), "not serving\n");

  // kubelet's directory exists but kubelet.sock does not: the plugin serves and waits.
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());
  ASSERT_EQ(daemon_->registration_mode(), RegistrationMode::kDevicePlugin);
  std::string waiting = HttpGet(port, "/healthz");
  EXPECT_EQ(waiting.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << waiting;
  EXPECT_EQ(Body(waiting), "not registered with kubelet: rdma/p\n");
  EXPECT_NE(HttpGet(port, "/metrics").find("rdmak8s_ready 0"), std::string::npos);

  ASSERT_TRUE(kubelet_->Start().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  // The registration reply reaches kubelet before the daemon records it: wait for the record.
  std::string after;
  for (auto until = std::chrono::steady_clock::now() + kWait; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(10ms)) {
    after = HttpGet(port, "/healthz");
    if (after.rfind("HTTP/1.1 200", 0) == 0) break;
  }
  EXPECT_EQ(after.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << after;
  EXPECT_EQ(Body(after), "ok\n");

  StopDaemon();
  std::string stopped = HttpGet(port, "/healthz");
  EXPECT_EQ(Body(stopped), "not serving\n") << stopped;
}

}  // namespace
}  // namespace rdmak8s::dp
