// StopSignals with real signals: the three signals blocked, sent to this process or thread,
// waited for on the signalfd with poll, and read as what they ask of the agent.
#include "node/stop_signals.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include <gtest/gtest.h>

namespace rdmak8s::node {
namespace {

constexpr int kWaitMs = 10000;

class StopSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // This test binary has no other thread: a signal sent to the process is pending for this one.
    ASSERT_TRUE(BlockStopSignals().ok());
    auto opened = StopSignals::Open();
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    signals_.emplace(std::move(opened).value());
  }

  // Waits (bounded) for the fd to say a signal is waiting, then reads it.
  ReceivedSignal WaitAndRead() {
    pollfd p{signals_->fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, kWaitMs), 1) << "no signal on the signalfd within " << kWaitMs << " ms";
    auto got = signals_->Read();
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.ok() ? *got : ReceivedSignal{};
  }

  std::optional<StopSignals> signals_;
};

TEST_F(StopSignalsTest, SighupAsksToLookAgain) {
  ASSERT_EQ(::raise(SIGHUP), 0);
  ReceivedSignal s = WaitAndRead();
  EXPECT_EQ(s.request, SignalRequest::kLookAgain);
  EXPECT_EQ(s.signo, SIGHUP);
  EXPECT_EQ(s.name(), "Hangup");
}

TEST_F(StopSignalsTest, SigtermAndSigintSentToTheProcessAskToStop) {
  for (int signo : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(strsignal(signo));
    ASSERT_EQ(::kill(::getpid(), signo), 0);
    ReceivedSignal s = WaitAndRead();
    EXPECT_EQ(s.request, SignalRequest::kStop);
    EXPECT_EQ(s.signo, signo);
  }
}

TEST_F(StopSignalsTest, NothingWaitingReadsAsNoneWithoutBlocking) {
  auto got = signals_->Read();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->request, SignalRequest::kNone);
  EXPECT_EQ(got->signo, 0);
}

TEST_F(StopSignalsTest, EachReadTakesOneSignal) {
  ASSERT_EQ(::raise(SIGHUP), 0);
  ASSERT_EQ(::raise(SIGTERM), 0);
  // Both are pending once raise returned (a blocked signal stays pending for this thread).
  ReceivedSignal first = WaitAndRead();
  ReceivedSignal second = WaitAndRead();
  EXPECT_NE(first.signo, second.signo);
  EXPECT_TRUE(first.signo == SIGHUP || first.signo == SIGTERM) << first.signo;
  EXPECT_TRUE(second.signo == SIGHUP || second.signo == SIGTERM) << second.signo;
  auto none = signals_->Read();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->request, SignalRequest::kNone);
}

TEST_F(StopSignalsTest, MovedFromOwnsNoFd) {
  const int fd = signals_->fd();
  StopSignals moved = std::move(*signals_);
  EXPECT_EQ(moved.fd(), fd);
  EXPECT_EQ(signals_->fd(), -1);  // NOLINT(bugprone-use-after-move): the contract under test
}

}  // namespace
}  // namespace rdmak8s::node
