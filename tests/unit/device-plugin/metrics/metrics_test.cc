// Readiness and liveness as /readyz, /healthz and /livez report them (device-plugin/metrics/metrics.h),
// and the HTTP server under idle connections, over real loopback TCP.
#include "device-plugin/metrics/metrics.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/loopback_http.h"

namespace rdmak8s::dp {
namespace {

using namespace std::chrono_literals;

TEST(MetricsTest, NotReadyUntilServingAndEveryReportedPoolIsRegistered) {
  Metrics m("/nonexistent");
  EXPECT_EQ(m.Unready(), "not serving");
  m.SetRegistered("rdma/a", false);
  m.SetRegistered("rdma/b", false);
  m.SetServing(true);
  EXPECT_EQ(m.Unready(), "not registered with kubelet: rdma/a, rdma/b");
  m.SetRegistered("rdma/a", true);
  EXPECT_EQ(m.Unready(), "not registered with kubelet: rdma/b");
  m.RemovePool("rdma/b");
  EXPECT_EQ(m.Unready(), "");
  EXPECT_NE(m.Scrape().find("rdmak8s_ready 1"), std::string::npos);
  m.SetServing(false);
  EXPECT_EQ(m.Unready(), "not serving");
  EXPECT_NE(m.Scrape().find("rdmak8s_ready 0"), std::string::npos);
}

TEST(MetricsTest, EventLoopIsStalledWhenItsLastHeartbeatIsOlderThanTheBound) {
  Metrics m("/nonexistent");
  m.SetServing(true);
  m.SetStallBound(0s);
  EXPECT_EQ(m.Unready(), "") << "no heartbeat yet: not checked";
  m.Heartbeat();
  std::this_thread::sleep_for(2ms);
  EXPECT_EQ(m.Unready().rfind("event loop stalled: no wakeup for ", 0), 0u) << m.Unready();
  m.SetStallBound(3600s);
  m.Heartbeat();
  EXPECT_EQ(m.Unready(), "");
}

int Connect(int port) { return testing::ConnectLoopback(port, std::chrono::seconds(20)); }
std::string HttpGet(int port, const std::string& path, const std::string& method = "GET") {
  return testing::HttpRequest(port, path, method);
}

// True while the server has not closed `fd` (nothing to read yet, no EOF).
bool StillOpen(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

using testing::StatusLine;

TEST(MetricsTest, LivenessDoesNotDependOnRegistrationButReadinessDoes) {
  Metrics m("/nonexistent");
  ASSERT_TRUE(m.Serve("127.0.0.1:0").ok());
  m.SetServing(true);
  m.SetRegistered("rdma/a", false);
  m.Heartbeat();
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/livez")), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/readyz")), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/healthz")), "HTTP/1.1 503 Service Unavailable")
      << "/healthz keeps its readiness meaning";
  m.SetRegistered("rdma/a", true);
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/readyz")), "HTTP/1.1 200 OK");
  m.SetStallBound(0s);
  std::this_thread::sleep_for(2ms);  // the heartbeat ages past the zero bound
  std::string live = HttpGet(m.port(), "/livez");
  EXPECT_EQ(StatusLine(live), "HTTP/1.1 503 Service Unavailable") << live;
  EXPECT_NE(live.find("event loop stalled"), std::string::npos) << live;
}

TEST(MetricsTest, HeadHasNoBodyAndOtherMethodsAreRefused) {
  Metrics m("/nonexistent");
  ASSERT_TRUE(m.Serve("127.0.0.1:0").ok());
  std::string head = HttpGet(m.port(), "/livez", "HEAD");
  EXPECT_EQ(StatusLine(head), "HTTP/1.1 200 OK");
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/livez", "POST")), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/nothing")), "HTTP/1.1 404 Not Found");
}

// Anyone who reaches the port can open connections and send nothing (or half a request): the
// probes must still be answered, and those connections stay open until their own timeout.
TEST(MetricsTest, ProbesAreAnsweredWhileIdleConnectionsAreHeldOpen) {
  Metrics m("/nonexistent");
  ASSERT_TRUE(m.Serve("127.0.0.1:0").ok());
  m.SetServing(true);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    int fd = Connect(m.port());
    ASSERT_GE(fd, 0);
    if (i % 2 == 1) {
      const char partial[] = "GET /healthz HTTP/1.1\r\nHost:";
      (void)!write(fd, partial, sizeof(partial) - 1);
    }
    idle.push_back(fd);
  }
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/livez")), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(HttpGet(m.port(), "/healthz")), "HTTP/1.1 200 OK");
  for (int fd : idle) {
    EXPECT_TRUE(StillOpen(fd)) << "answered only after the server gave up on an idle connection";
    close(fd);
  }
}

// SIGTERM ends the process once Run() returns and Metrics is destroyed: that must not wait for
// a client that holds a connection open (nor for a poll interval of the server).
TEST(MetricsTest, StopReturnsAtOnceWhileAClientHoldsAConnection) {
  auto m = std::make_unique<Metrics>("/nonexistent");
  ASSERT_TRUE(m->Serve("127.0.0.1:0").ok());
  int fd = Connect(m->port());
  ASSERT_GE(fd, 0);
  const char partial[] = "GET /metrics HTTP/1.1\r\n";
  (void)!write(fd, partial, sizeof(partial) - 1);
  ASSERT_EQ(StatusLine(HttpGet(m->port(), "/livez")), "HTTP/1.1 200 OK");  // the server is up
  auto stopped = std::async(std::launch::async, [&] { m.reset(); });
  // Generous for a server that stops on a wake-up; civetweb's stop waited for its 2 s poll
  // quantum on the held connection (failed 3 of 3 here).
  EXPECT_EQ(stopped.wait_for(1500ms), std::future_status::ready);
  stopped.wait();
  char c;
  EXPECT_EQ(read(fd, &c, 1), 0) << "the held connection is closed by the stop";
  close(fd);
}

// A restart right after exit must bind again: SO_REUSEADDR, with a connection in TIME_WAIT on
// the server's side (the server closes first: "Connection: close").
TEST(MetricsTest, ServeBindsAgainRightAfterAnotherServerOnThePortStopped) {
  int port = 0;
  {
    Metrics first("/nonexistent");
    ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
    port = first.port();
    ASSERT_EQ(StatusLine(HttpGet(port, "/livez")), "HTTP/1.1 200 OK");
  }
  Metrics second("/nonexistent");
  Status s = second.Serve("127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(MetricsTest, ServeFailsWithTheAddressWhenThePortIsTaken) {
  Metrics first("/nonexistent");
  ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
  Metrics second("/nonexistent");
  std::string address = "127.0.0.1:" + std::to_string(first.port());
  Status s = second.Serve(address);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.sys_errno(), EADDRINUSE) << "node::ListenRetry tells a taken address by its errno";
  EXPECT_EQ(s.message(), "metrics listen on " + address + ": bind: Address already in use") << s.message();
}

}  // namespace
}  // namespace rdmak8s::dp
