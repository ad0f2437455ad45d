#include "node/probes.h"

#include <atomic>
#include <chrono>
#include <cstdint>

#include <gtest/gtest.h>

namespace rdmak8s::node {
namespace {

using std::chrono::seconds;

// A clock the test moves: nanoseconds since an arbitrary start (never 0, as the steady clock).
struct FakeClock {
  std::atomic<int64_t> ns{1'000'000'000};
  LoopHeartbeats::Clock AsClock() {
    return [this] { return ns.load(); };
  }
  void Advance(seconds s) { ns += std::chrono::nanoseconds(s).count(); }
};

TEST(LoopHeartbeatsTest, ALoopThatNeverBeatIsNotChecked) {
  FakeClock clock;
  LoopHeartbeats beats(seconds(10), clock.AsClock());
  beats.SetStallBound("event loop", seconds(1));
  clock.Advance(seconds(3600));
  EXPECT_EQ(beats.Stalled(), "");
}

TEST(LoopHeartbeatsTest, ALoopPastItsBoundIsNamedWithItsAge) {
  FakeClock clock;
  LoopHeartbeats beats(seconds(10), clock.AsClock());
  beats.Beat("event loop");
  clock.Advance(seconds(10));
  EXPECT_EQ(beats.Stalled(), "") << "exactly at the bound is not yet stalled";
  clock.Advance(seconds(2));
  EXPECT_EQ(beats.Stalled(), "event loop stalled: no wakeup for 12s");
  beats.Beat("event loop");
  EXPECT_EQ(beats.Stalled(), "");
}

TEST(LoopHeartbeatsTest, EachLoopHasItsOwnBoundSetBeforeOrWithTheBeat) {
  FakeClock clock;
  LoopHeartbeats beats(seconds(100), clock.AsClock());
  beats.SetStallBound("health watch", seconds(5));
  beats.Beat("health watch");
  beats.Beat("slice sync", seconds(60));
  beats.Beat("other");  // the default bound
  clock.Advance(seconds(6));
  EXPECT_EQ(beats.Stalled(), "health watch stalled: no wakeup for 6s");
  beats.Beat("health watch", seconds(100));
  clock.Advance(seconds(58));
  EXPECT_EQ(beats.Stalled(), "slice sync stalled: no wakeup for 64s");
}

TEST(LoopHeartbeatsTest, ARaisedBoundAppliesToTheLastBeat) {
  FakeClock clock;
  LoopHeartbeats beats(seconds(5), clock.AsClock());
  beats.Beat("event loop");
  clock.Advance(seconds(8));
  ASSERT_NE(beats.Stalled(), "");
  beats.SetStallBound("event loop", seconds(60));
  EXPECT_EQ(beats.Stalled(), "");
}

TEST(ProbeResponseTest, EmptyReasonIsOkAndAReasonIs503WithIt) {
  HttpResponse ok = ProbeResponse("");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "ok\n");
  HttpResponse bad = ProbeResponse("not registered with kubelet");
  EXPECT_EQ(bad.status, 503);
  EXPECT_EQ(bad.body, "not registered with kubelet\n");
  EXPECT_EQ(bad.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(NotFoundResponse().status, 404);
}

}  // namespace
}  // namespace rdmak8s::node
