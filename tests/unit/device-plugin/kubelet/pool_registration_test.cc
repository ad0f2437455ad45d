// Registration with kubelet without the daemon (device-plugin/kubelet/): registration modes, the Register backoff, and the
// registration state machine driven by hand (times passed in) against a real stale kubelet.sock,
// the fake kubelet and real PoolServers on unix sockets.
#include "device-plugin/kubelet/pool_registration.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "device-plugin/metrics/metrics.h"
#include "support/fake_kubelet.h"
#include "support/temp_dir.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = PoolRegistrations::Clock;

constexpr auto kWait = 10s;
constexpr std::chrono::milliseconds kStreamWait = 5s;
constexpr std::chrono::milliseconds kDialBackWait = 15s;

TEST(PoolRegistrationRulesTest, RegisterBackoffDoublesFromOneSecondUpToThirty) {
  std::vector<int64_t> got;
  for (int failures = 1; failures <= 8; ++failures) got.push_back(RegisterBackoff(failures).count());
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, 4, 8, 16, 30, 30, 30}));
}

TEST(PoolRegistrationRulesTest, SocketFileNameMakesTheResourceOneFileName) {
  EXPECT_EQ(SocketFileName("rdma/p"), "rdmak8s-rdma-p.sock");
  EXPECT_EQ(SocketFileName("example.com/a/b"), "rdmak8s-example.com-a-b.sock");
}

TEST(PoolRegistrationRulesTest, ParseRegistrationModeNamesTheFlagWhenItIsNoMode) {
  EXPECT_EQ(ParseRegistrationMode("auto").value(), RegistrationMode::kAuto);
  EXPECT_EQ(ParseRegistrationMode("device-plugin").value(), RegistrationMode::kDevicePlugin);
  EXPECT_EQ(ParseRegistrationMode("plugin-watcher").value(), RegistrationMode::kPluginWatcher);
  auto bad = ParseRegistrationMode("kubelet");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--registration kubelet: want auto, device-plugin or plugin-watcher");
}

class PoolRegistrationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(root_.empty());
    kubelet_dir_ = root_ + "/k";
    fs::create_directories(kubelet_dir_);
  }
  void TearDown() override {
    servers_.clear();
    registrations_.reset();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  PoolRegistrations& NewLink(RegistrationMode mode = RegistrationMode::kDevicePlugin,
                       Metrics* metrics = nullptr) {
    PoolRegistrations::Options options{mode, kubelet_dir_, root_ + "/registry", register_timeout_, metrics,
                                       kStreamWait};
    options.dial_back_wait = kDialBackWait;
    registrations_ = std::make_unique<PoolRegistrations>(std::move(options));
    EXPECT_TRUE(registrations_->Start().ok());
    return *registrations_;
  }

  // A served pool "p" (rdma/p) added to the link; `before_rename` is its server's hook.
  PoolServer& AddPool(std::function<void(const std::string&)> before_rename = nullptr) {
    PoolServer::Options so = registrations_->ServerOptions("rdma/p");
    so.hooks.before_rename = std::move(before_rename);
    auto state = std::make_shared<PoolState>();
    state->resource = "rdma/p";
    servers_.push_back(std::make_unique<PoolServer>(std::move(so), std::move(state)));
    EXPECT_TRUE(servers_.back()->Start().ok());
    registrations_->Add("p", "rdma/p", servers_.back().get());
    return *servers_.back();
  }

  // Waits until the Register in flight is back (the link's fd also wakes for stream changes),
  // then hands the results to the link at `now`. With nothing in flight: the next wakeup.
  bool HandleResultAt(Clock::time_point now) {
    for (auto deadline = Clock::now() + kWait; Clock::now() < deadline;) {
      pollfd p{registrations_->fd(), POLLIN, 0};
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) != 1) return false;
      const uint64_t in_flight = P().register_seq;
      registrations_->HandleRegistrations(now);
      if (in_flight == 0 || P().register_seq != in_flight) return true;
    }
    return false;
  }

  const PoolRegistrations::PoolRegistration& P() const { return *registrations_->pool("p"); }

  // The fake kubelet started, and pool "p" registered with it and streaming.
  PoolServer& StartRegistered() {
    kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
    EXPECT_TRUE(kubelet_->Start().ok());
    NewLink();
    PoolServer& server = AddPool();
    registrations_->RegisterAll();
    EXPECT_TRUE(HandleResultAt(Clock::now()));
    EXPECT_TRUE(P().registered);
    EXPECT_TRUE(server.WaitForOpenStreams(1, kWait));
    return server;
  }

  std::string root_;
  std::string kubelet_dir_;
  std::chrono::milliseconds register_timeout_ = 3000ms;
  std::unique_ptr<fake::FakeKubelet> kubelet_;
  std::vector<std::unique_ptr<PoolServer>> servers_;
  std::unique_ptr<PoolRegistrations> registrations_;
};

TEST_F(PoolRegistrationsTest, ModeAndSocketDirFollowWhatKubeletHasOnTheNode) {
  EXPECT_EQ(ResolveRegistrationMode(RegistrationMode::kAuto, kubelet_dir_, root_ + "/registry"),
            RegistrationMode::kDevicePlugin);
  fs::create_directories(root_ + "/registry");
  EXPECT_EQ(ResolveRegistrationMode(RegistrationMode::kAuto, root_ + "/none", root_ + "/registry"),
            RegistrationMode::kPluginWatcher);
  EXPECT_EQ(ResolveRegistrationMode(RegistrationMode::kDevicePlugin, root_ + "/none", root_ + "/registry"),
            RegistrationMode::kDevicePlugin);

  PoolRegistrations& watcher = NewLink(RegistrationMode::kPluginWatcher);
  EXPECT_EQ(watcher.socket_dir(), root_ + "/registry");
  PoolServer::Options so = watcher.ServerOptions("rdma/p");
  EXPECT_EQ(so.socket_path, root_ + "/registry/rdmak8s-rdma-p.sock");
  EXPECT_TRUE(so.plugin_watcher);
  EXPECT_EQ(NewLink().ServerOptions("rdma/p").socket_path, kubelet_dir_ + "/rdmak8s-rdma-p.sock");
}

TEST_F(PoolRegistrationsTest, InPluginWatcherModeNothingIsSubmittedKubeletDialsUs) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  fs::create_directories(root_ + "/registry");
  NewLink(RegistrationMode::kPluginWatcher);
  AddPool();
  registrations_->RegisterAll();
  EXPECT_EQ(P().register_seq, 0u);
  EXPECT_FALSE(P().registered);
}

TEST_F(PoolRegistrationsTest, WithoutKubeletSocketAPoolWaitsForItInsteadOfRetrying) {
  NewLink();
  AddPool();
  registrations_->Register("p");
  EXPECT_EQ(P().register_seq, 0u) << "nothing submitted";
  EXPECT_EQ(P().retry_at, Clock::time_point{}) << "no retry: kubelet.sock appearing is the event";
  auto bound = Clock::now() + 1h;
  EXPECT_EQ(registrations_->NextWakeup(bound), bound);
}

// A stale kubelet.sock (kubelet died): every Register fails, and is tried again after 1 s, 2 s, ...
TEST_F(PoolRegistrationsTest, AFailedRegisterIsRetriedAfterABackoffThatDoubles) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = kubelet_dir_ + "/" + kKubeletSocket;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);  // the file stays: connecting is refused
  register_timeout_ = 100ms;
  NewLink();
  AddPool();
  registrations_->Register("p");
  EXPECT_NE(P().register_seq, 0u);

  const auto t0 = Clock::now();
  ASSERT_TRUE(HandleResultAt(t0));
  EXPECT_FALSE(P().registered);
  EXPECT_EQ(P().register_seq, 0u);
  EXPECT_EQ(P().register_failures, 1);
  EXPECT_EQ(P().retry_at, t0 + 1s);
  EXPECT_EQ(registrations_->NextWakeup(t0 + 1h), t0 + 1s);

  registrations_->OnTimer(t0 + 999ms);
  EXPECT_EQ(P().register_seq, 0u) << "not due yet";
  registrations_->OnTimer(t0 + 1s);
  EXPECT_NE(P().register_seq, 0u) << "due: submitted again";
  const auto t1 = t0 + 1s;
  ASSERT_TRUE(HandleResultAt(t1));
  EXPECT_EQ(P().register_failures, 2);
  EXPECT_EQ(P().retry_at, t1 + 2s);
}

// Serving again after our socket was removed can fail (a directory swept on every attempt): the
// pool is not registered while it does not serve (kubelet would dial a socket that is not
// there), is served again on the timer, and registers once it serves.
TEST_F(PoolRegistrationsTest, ASocketThatCouldNotBeServedAgainIsRetriedAndOnlyThenRegistered) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  NewLink();
  std::atomic<bool> sweeping{false};
  PoolServer& server = AddPool([&](const std::string& staging) {
    if (sweeping.load()) unlink(staging.c_str());
  });
  registrations_->Register("p");
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  ASSERT_TRUE(P().registered);
  ASSERT_EQ(kubelet_->Registrations().size(), 1u);

  sweeping = true;
  const std::string name = SocketFileName("rdma/p");
  ASSERT_TRUE(fs::remove(kubelet_dir_ + "/" + name));
  const auto t0 = Clock::now();
  registrations_->OnDirEvent(IN_DELETE, name, t0);
  EXPECT_FALSE(server.SocketPresent());
  EXPECT_FALSE(P().registered);
  EXPECT_EQ(P().serve_retry_at, t0 + 1s);
  EXPECT_EQ(P().register_seq, 0u) << "not serving: not registered";
  registrations_->Register("p");
  EXPECT_EQ(P().register_seq, 0u) << "Register waits for the socket to serve";
  EXPECT_EQ(registrations_->NextWakeup(t0 + 1h), t0 + 1s);

  registrations_->OnTimer(t0 + 500ms);
  EXPECT_EQ(P().serve_retry_at, t0 + 1s) << "not due yet";
  sweeping = false;
  registrations_->OnTimer(t0 + 1s);
  EXPECT_TRUE(server.SocketPresent());
  EXPECT_EQ(P().serve_retry_at, Clock::time_point{});
  EXPECT_NE(P().register_seq, 0u);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  EXPECT_TRUE(P().registered);
}

// A kubelet starting removes kubelet.sock (and every socket), then creates a new kubelet.sock.
TEST_F(PoolRegistrationsTest, KubeletSocketRemovedUnregistersAndCreatedServesAgainAndRegisters) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  NewLink();
  PoolServer& server = AddPool();
  registrations_->RegisterAll();
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  ASSERT_TRUE(P().registered);

  const auto t0 = Clock::now();
  registrations_->OnDirEvent(IN_DELETE, kKubeletSocket, t0);
  EXPECT_FALSE(P().registered);
  ASSERT_TRUE(fs::remove(kubelet_dir_ + "/" + SocketFileName("rdma/p")));  // the sweep
  registrations_->OnDirEvent(IN_CREATE, kKubeletSocket, t0);
  EXPECT_TRUE(server.SocketPresent()) << "served again before registering";
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  EXPECT_TRUE(P().registered);
}

// A kubelet that takes connections and answers them (its HTTP/2 SETTINGS) but never a
// Register: one that is starting, or going away. Each accepted connection is kept open here.
class MuteKubelet {
 public:
  explicit MuteKubelet(const std::string& path) {
    lfd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ok_ = lfd_ >= 0 && bind(lfd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
          listen(lfd_, 16) == 0;
  }
  ~MuteKubelet() {
    if (lfd_ >= 0) close(lfd_);
    for (int fd : conns_) close(fd);
  }
  bool ok() const { return ok_; }
  // The next connection, once the plugin has sent something on it (gRPC's preface); -1 when
  // none came within kWait. Not answered yet.
  int Accept() {
    pollfd p{lfd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kWait).count())) != 1) return -1;
    int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return -1;
    conns_.push_back(fd);
    return fd;
  }
  // Answers the connection: an empty SETTINGS frame, the server's preface. (The plugin may have
  // closed it already.)
  static void Answer(int fd) {
    const unsigned char settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
    (void)send(fd, settings, sizeof(settings), MSG_NOSIGNAL);
  }
  // True once the plugin closed its end of `fd` (everything it sent read and dropped).
  static bool ClosedByPlugin(int fd) {
    char buf[4096];
    for (auto deadline = Clock::now() + kWait; Clock::now() < deadline;) {
      pollfd c{fd, POLLIN, 0};
      if (poll(&c, 1, 100) != 1) continue;
      ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    }
    return false;
  }

 private:
  int lfd_ = -1;
  bool ok_ = false;
  std::vector<int> conns_;
};

// Every Register attempt closes its connection when it ends, wherever it was: connected and
// waiting for kubelet's answer, or in the call. kubelet answering a connection whose attempt was
// superseded (a newer Register for the pool: kubelet restarted) is where gRPC's own channels
// left the connection open for good (100 kubelet restarts left 5 to 18 such sockets in the
// plugin, their peers gone).
TEST_F(PoolRegistrationsTest, EveryRegisterClosesItsConnectionWhenSupersededOrCancelled) {
  MuteKubelet kubelet(kubelet_dir_ + "/" + kKubeletSocket);
  ASSERT_TRUE(kubelet.ok());
  register_timeout_ = 60s;  // ended by the next Register or by Shutdown, never by the deadline
  NewLink();
  AddPool();
  registrations_->Register("p");
  for (int i = 0; i < 5; ++i) {
    int conn = kubelet.Accept();
    ASSERT_GE(conn, 0) << "attempt " << i;
    registrations_->Register("p");  // supersedes the attempt in flight
    ASSERT_TRUE(HandleResultAt(Clock::now())) << "the superseded attempt ended";
    MuteKubelet::Answer(conn);  // kubelet's answer comes after the attempt ended
    EXPECT_TRUE(MuteKubelet::ClosedByPlugin(conn)) << "superseded attempt " << i;
  }
  int answered = kubelet.Accept();  // the Register in flight, answered and in its call
  ASSERT_GE(answered, 0);
  MuteKubelet::Answer(answered);
  // A call on the kubelet there now is not cancelled (it may have the Register: sending another
  // would register twice); a kubelet that started since (a new kubelet.sock) makes it moot.
  ASSERT_EQ(unlink((kubelet_dir_ + "/" + kKubeletSocket).c_str()), 0);
  MuteKubelet next(kubelet_dir_ + "/" + kKubeletSocket);
  ASSERT_TRUE(next.ok());
  registrations_->Register("p");
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  EXPECT_TRUE(MuteKubelet::ClosedByPlugin(answered)) << "superseded in the call";
  int last = next.Accept();
  ASSERT_GE(last, 0);
  registrations_->Shutdown();
  MuteKubelet::Answer(last);
  EXPECT_TRUE(MuteKubelet::ClosedByPlugin(last)) << "cancelled by Shutdown";
}

// The race seen against kubelet v1.36.2 (30 of 151 restarts): a starting kubelet's sweep removes
// our socket; serving it again registers at once, and that Register reaches the new kubelet
// before the "kubelet.sock created" event is read. A second Register with that kubelet would make
// it end the first stream, close the second connection and keep the resource at 0.
TEST_F(PoolRegistrationsTest, APoolRegisteredWithTheNewKubeletBeforeItsSocketEventIsNotRegisteredTwice) {
  PoolServer& server = StartRegistered();
  ASSERT_FALSE(HasFailure());

  ASSERT_TRUE(kubelet_->Restart().ok());  // its sweep (kubelet.sock and ours), a new kubelet.sock
  const auto t0 = Clock::now();
  registrations_->OnDirEvent(IN_DELETE, kKubeletSocket, t0);
  registrations_->OnDirEvent(IN_DELETE, SocketFileName("rdma/p"), t0);  // served again: registers at once
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  ASSERT_TRUE(P().registered);
  EXPECT_EQ(P().instance, KubeletInstanceOf(kubelet_->socket_path()));

  registrations_->OnDirEvent(IN_MOVED_TO, kKubeletSocket, Clock::now());  // the new kubelet.sock, read late
  EXPECT_EQ(P().register_seq, 0u) << "a second Register with the same kubelet";
  EXPECT_TRUE(P().registered);
  ASSERT_TRUE(server.WaitForOpenStreams(1, kWait));
  auto alloc = kubelet_->Allocate("rdma/p", {{"x"}});  // the pool has no device: refused by it
  EXPECT_NE(alloc.status().code(), StatusCode::kNotFound) << alloc.status().ToString();
  for (const auto& e : kubelet_->Events()) EXPECT_EQ(e.find("disconnect"), std::string::npos) << e;
}

// kubelet v1.36 ending a pool's stream (two Registers for one resource, or its connection gone)
// keeps the resource at 0 until the plugin registers again: the pool registers again when no new
// stream came within the stream wait, and is not ready meanwhile.
TEST_F(PoolRegistrationsTest, APoolWhoseStreamKubeletEndedRegistersAgainAfterTheStreamWaitAndIsUnreadyTill) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  Metrics metrics(root_ + "/sys");
  metrics.SetServing(true);
  NewLink(RegistrationMode::kDevicePlugin, &metrics);
  PoolServer& server = AddPool();
  registrations_->RegisterAll();
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  ASSERT_TRUE(server.WaitForOpenStreams(1, kWait));
  registrations_->HandleRegistrations(Clock::now());
  EXPECT_EQ(metrics.Unready(), "");

  // A second Register for the resource, as the race sent: kubelet ends the first stream when
  // the second opens, then closes the second connection too.
  Status again = RegisterWithKubelet(kubelet_->socket_path(), SocketFileName("rdma/p"), "rdma/p", 3000ms);
  ASSERT_TRUE(again.ok()) << again.ToString();
  ASSERT_TRUE(server.WaitForOpenStreams(0, kWait)) << "kubelet kept a stream";
  auto events = kubelet_->Events();
  EXPECT_NE(std::find(events.begin(), events.end(), "disconnect rdma/p"), events.end());
  EXPECT_EQ(kubelet_->Allocate("rdma/p", {{"x"}}).status().code(), StatusCode::kNotFound);

  const auto t0 = Clock::now();
  registrations_->HandleRegistrations(t0);
  EXPECT_EQ(metrics.Unready(), "no ListAndWatch stream from kubelet: rdma/p");
  EXPECT_EQ(registrations_->NextWakeup(t0 + 1h), t0 + kStreamWait);
  registrations_->OnTimer(t0 + kStreamWait - 1ms);
  EXPECT_EQ(P().register_seq, 0u) << "not due yet";
  registrations_->OnTimer(t0 + kStreamWait);
  EXPECT_NE(P().register_seq, 0u) << "due: registering again";
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 3, kWait));
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  ASSERT_TRUE(server.WaitForOpenStreams(1, kWait));
  registrations_->HandleRegistrations(Clock::now());
  EXPECT_EQ(metrics.Unready(), "");
  // A second loss in a row waits longer.
  EXPECT_EQ(P().stream_losses, 1);
  EXPECT_EQ(StreamWait(kStreamWait, 1), 10s);
}

// A loaded kubelet dials back (and accepts) after the plugin's Register deadline. Until it does,
// it may still accept the Register: no other is sent to it, neither on the retry timer nor when
// something asks for one; its dial-back makes the pool registered.
TEST_F(PoolRegistrationsTest, ARegisterAnsweredTooLateIsNotSentAgainAndKubeletsDialBackRegistersIt) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  kubelet_->SetRegisterDelays(/*before_dial_back=*/1s, /*before_reply=*/0s);
  register_timeout_ = 200ms;
  NewLink();
  PoolServer& server = AddPool();
  registrations_->RegisterAll();
  const auto t0 = Clock::now();
  ASSERT_TRUE(HandleResultAt(t0));  // Deadline Exceeded, in its call on this kubelet
  EXPECT_FALSE(P().registered);
  EXPECT_EQ(registrations_->NextWakeup(t0 + 1h), t0 + kDialBackWait) << "no retry before";
  registrations_->RegisterAll();
  EXPECT_EQ(P().register_seq, 0u) << "a second Register while kubelet may accept the first";
  registrations_->OnTimer(t0 + 1s);
  EXPECT_EQ(P().register_seq, 0u) << "a second Register while kubelet may accept the first";

  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));  // accepted, late
  ASSERT_TRUE(HandleResultAt(Clock::now()));                        // its dial-back woke the link
  EXPECT_TRUE(P().registered);
  EXPECT_EQ(P().instance, KubeletInstanceOf(kubelet_->socket_path()));
  ASSERT_TRUE(server.WaitForOpenStreams(1, kWait));
  EXPECT_EQ(kubelet_->Registrations().size(), 1u);
  EXPECT_EQ(kubelet_->DoubleRegistrations("rdma/p"), 0u);
}

// Our socket removed while a Register is in flight that kubelet already dialled back for (CI
// saw it under load: DaemonTest.RemovedSocketIsServedAndRegisteredAgain). kubelet's connection is
// to the socket that is gone, so the Register's success does not cover the new serving: once
// its answer is in, the pool registers again, and kubelet gets the new socket.
TEST_F(PoolRegistrationsTest, ASocketRemovedAfterKubeletDialledBackForTheRegisterInFlightRegistersAgain) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  kubelet_->SetRegisterDelays(/*before_dial_back=*/0s, /*before_reply=*/1s);
  NewLink();
  PoolServer& server = AddPool();
  registrations_->RegisterAll();
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));  // dialled back, not answered
  ASSERT_NE(P().register_seq, 0u);
  const std::string sock = kubelet_dir_ + "/" + SocketFileName("rdma/p");
  ASSERT_TRUE(fs::remove(sock));
  registrations_->OnDirEvent(IN_DELETE, SocketFileName("rdma/p"), Clock::now());
  ASSERT_TRUE(fs::exists(sock)) << "served again";
  kubelet_->SetRegisterDelays(0s, 0s);
  ASSERT_TRUE(HandleResultAt(Clock::now()));  // the first answer: OK, for the old serving
  EXPECT_NE(P().register_seq, 0u) << "the new serving needs a Register of its own";
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  EXPECT_TRUE(P().registered);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  EXPECT_TRUE(server.WaitForOpenStreams(1, kWait));
}

// The recovery for a kubelet that never dials back for a Register whose answer did not come:
// after the dial-back wait (kubelet's own dial-back has given up by then), register again.
TEST_F(PoolRegistrationsTest, ARegisterKubeletNeverDialsBackForIsSentAgainAfterTheDialBackWait) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  kubelet_->SetRegisterDelays(/*before_dial_back=*/1h, /*before_reply=*/0s);  // (Stop cuts it short)
  register_timeout_ = 200ms;
  NewLink();
  AddPool();
  registrations_->RegisterAll();
  const auto t0 = Clock::now();
  ASSERT_TRUE(HandleResultAt(t0));
  registrations_->OnTimer(t0 + kDialBackWait - 1ms);
  EXPECT_EQ(P().register_seq, 0u) << "not due yet";
  registrations_->OnTimer(t0 + kDialBackWait);
  EXPECT_NE(P().register_seq, 0u) << "due: registering again";
}

// kubelet accepted the Register (it dialled back) but its ListAndWatch goroutine is late, as on a
// loaded node: while kubelet holds the connection it dialled back on, the stream wait running out
// is no reason for a second Register (that one would make kubelet drop the pool). The late stream
// comes and the pool streams.
TEST_F(PoolRegistrationsTest, ALateFirstStreamOnAConnectionKubeletHoldsIsWaitedForNotRegisteredAgain) {
  kubelet_ = std::make_unique<fake::FakeKubelet>(kubelet_dir_);
  ASSERT_TRUE(kubelet_->Start().ok());
  kubelet_->SetRegisterDelays(/*before_dial_back=*/0s, /*before_reply=*/0s, /*before_stream=*/2s);
  NewLink();
  PoolServer& server = AddPool();
  registrations_->RegisterAll();
  const auto t0 = Clock::now();
  ASSERT_TRUE(HandleResultAt(t0));
  ASSERT_TRUE(P().registered);
  ASSERT_EQ(server.open_streams(), 0) << "the stream is to come 2 s later";
  registrations_->OnTimer(t0 + kStreamWait);
  EXPECT_EQ(P().register_seq, 0u) << "a second Register while kubelet holds the first";
  EXPECT_TRUE(P().registered);
  ASSERT_TRUE(server.WaitForOpenStreams(1, kWait));
  registrations_->HandleRegistrations(Clock::now());
  EXPECT_TRUE(P().streaming);
  EXPECT_EQ(kubelet_->Registrations().size(), 1u);
}

// kubelet down (stopped: its kubelet.sock left, connects refused) when a lost stream's wait runs
// out: no Register (it would wait on a dead socket, then reach the next kubelet and may be
// answered too late there). The next kubelet's kubelet.sock registers the pool, once.
TEST_F(PoolRegistrationsTest, AStreamWaitRunningOutWhileKubeletIsDownWaitsForTheNextKubelet) {
  PoolServer& server = StartRegistered();
  ASSERT_FALSE(HasFailure());

  kubelet_->Stop();
  ASSERT_TRUE(fs::exists(kubelet_->socket_path()));
  ASSERT_TRUE(server.WaitForOpenStreams(0, kWait));
  const auto t0 = Clock::now();
  registrations_->HandleRegistrations(t0);
  registrations_->OnTimer(t0 + kStreamWait);
  EXPECT_EQ(P().register_seq, 0u) << "no kubelet listens: nothing to register with";
  EXPECT_FALSE(P().registered);
  EXPECT_EQ(registrations_->NextWakeup(t0 + 1h), t0 + 1h) << "the next kubelet.sock is the event";

  ASSERT_TRUE(kubelet_->Start().ok());  // its sweep, a new kubelet.sock
  registrations_->OnDirEvent(IN_CREATE, kKubeletSocket, Clock::now());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  ASSERT_TRUE(HandleResultAt(Clock::now()));
  EXPECT_TRUE(P().registered);
  ASSERT_TRUE(server.WaitForOpenStreams(1, kWait));
  EXPECT_EQ(kubelet_->DoubleRegistrations("rdma/p"), 0u);
}

TEST(PoolRegistrationRulesTest, StreamWaitDoublesFromTheFirstUpToThirtySeconds) {
  std::vector<int64_t> got;
  for (int losses = 0; losses <= 4; ++losses) got.push_back(StreamWait(5s, losses).count());
  EXPECT_EQ(got, (std::vector<int64_t>{5000, 10000, 20000, 30000, 30000}));
  EXPECT_EQ(StreamWait(45s, 3), 45s);
}

}  // namespace
}  // namespace rdmak8s::dp
