#include "node/probes.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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

// One step of a heartbeat story: a beat (with its bound, or the default), a bound set, the clock
// moved, or what Stalled() says then.
struct Step {
  enum class Kind { kBeat, kSetBound, kAdvance, kStalled } kind;
  std::string loop_or_expected;
  int64_t seconds_arg = -1;  // the bound (-1: the default), or how far the clock moves
  const char* why = "";
};
Step Beat(std::string loop, int64_t bound_s = -1) { return {Step::Kind::kBeat, std::move(loop), bound_s}; }
Step SetBound(std::string loop, int64_t bound_s) {
  return {Step::Kind::kSetBound, std::move(loop), bound_s};
}
Step Advance(int64_t s) { return {Step::Kind::kAdvance, "", s}; }
Step Stalled(std::string expected, const char* why = "") {
  return {Step::Kind::kStalled, std::move(expected), -1, why};
}

struct HeartbeatCase {
  const char* name;
  int64_t default_bound_s;
  std::vector<Step> steps;
};

class LoopHeartbeatsTest : public ::testing::TestWithParam<HeartbeatCase> {};

TEST_P(LoopHeartbeatsTest, StalledNamesTheLoopsPastTheirBoundWithTheirAge) {
  FakeClock clock;
  LoopHeartbeats beats(seconds(GetParam().default_bound_s), clock.AsClock());
  for (size_t i = 0; i < GetParam().steps.size(); ++i) {
    const Step& step = GetParam().steps[i];
    switch (step.kind) {
      case Step::Kind::kBeat:
        if (step.seconds_arg < 0) {
          beats.Beat(step.loop_or_expected);
        } else {
          beats.Beat(step.loop_or_expected, seconds(step.seconds_arg));
        }
        break;
      case Step::Kind::kSetBound:
        beats.SetStallBound(step.loop_or_expected, seconds(step.seconds_arg));
        break;
      case Step::Kind::kAdvance:
        clock.Advance(seconds(step.seconds_arg));
        break;
      case Step::Kind::kStalled:
        EXPECT_EQ(beats.Stalled(), step.loop_or_expected) << "step " << i << " " << step.why;
        break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Stories, LoopHeartbeatsTest,
    ::testing::Values(
        HeartbeatCase{"ALoopThatNeverBeatIsNotChecked", 10,
                      {SetBound("event loop", 1), Advance(3600), Stalled("")}},
        HeartbeatCase{"ALoopPastItsBoundIsNamedWithItsAge", 10,
                      {Beat("event loop"), Advance(10),
                       Stalled("", "exactly at the bound is not yet stalled"), Advance(2),
                       Stalled("event loop stalled: no wakeup for 12s"), Beat("event loop"),
                       Stalled("")}},
        HeartbeatCase{"EachLoopHasItsOwnBoundSetBeforeOrWithTheBeat", 100,
                      {SetBound("health watch", 5), Beat("health watch"), Beat("slice sync", 60),
                       Beat("other") /* the default bound */, Advance(6),
                       Stalled("health watch stalled: no wakeup for 6s"),
                       Beat("health watch", 100), Advance(58),
                       Stalled("slice sync stalled: no wakeup for 64s")}},
        HeartbeatCase{"ARaisedBoundAppliesToTheLastBeat", 5,
                      {Beat("event loop"), Advance(8),
                       Stalled("event loop stalled: no wakeup for 8s"),
                       SetBound("event loop", 60), Stalled("")}}),
    [](const ::testing::TestParamInfo<HeartbeatCase>& info) { return std::string(info.param.name); });

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
