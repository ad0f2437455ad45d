// Readiness as /healthz reports it (device-plugin/metrics.h); the HTTP side is in daemon_test.cc.
#include "device-plugin/metrics.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

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

TEST(MetricsTest, ServeFailsWithTheAddressWhenThePortIsTaken) {
  Metrics first("/nonexistent");
  ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
  Metrics second("/nonexistent");
  std::string address = "127.0.0.1:" + std::to_string(first.port());
  Status s = second.Serve(address);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message().rfind("metrics listen on " + address + ": ", 0), 0u) << s.message();
}

}  // namespace
}  // namespace rdmak8s::dp
