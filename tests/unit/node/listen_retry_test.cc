// node::ListenRetry: a taken address is tried again until it is free; anything else is the
// caller's error at once.
#include "node/listen_retry.h"

#include <cerrno>
#include <future>
#include <mutex>

#include <gtest/gtest.h>

namespace rdmak8s::node {
namespace {

using namespace std::chrono_literals;

constexpr ListenRetry::Options kFast{std::chrono::milliseconds(1), std::chrono::milliseconds(2)};

Status Taken() { return ErrnoError(EADDRINUSE, "bind"); }

TEST(ListenRetryTest, AFreeAddressIsListenedOnAtOnceWithNoRetry) {
  int calls = 0;
  auto r = ListenRetry::Start([&] { ++calls; return Status::Ok(); }, kFast);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)->listening());
  r->reset();
  EXPECT_EQ(calls, 1);
}

TEST(ListenRetryTest, AnErrorThatIsNotATakenAddressIsReturnedAsItIs) {
  auto r = ListenRetry::Start([] { return InvalidArgumentError("want host:port"); }, kFast);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "want host:port");
  auto denied = ListenRetry::Start([] { return ErrnoError(EACCES, "bind"); }, kFast);
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
}

TEST(ListenRetryTest, ATakenAddressIsTriedAgainUntilItIsFree) {
  std::mutex mu;
  int calls = 0;
  std::promise<void> bound;
  auto r = ListenRetry::Start(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        if (++calls < 4) return calls == 2 ? ErrnoError(EADDRNOTAVAIL, "bind") : Taken();
        bound.set_value();
        return Status::Ok();
      },
      kFast);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(bound.get_future().wait_for(60s), std::future_status::ready);
  r->reset();  // joins the retry thread: listening_ was set before it ended
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(calls, 4);
}

TEST(ListenRetryTest, DestroyedWhileTheAddressIsTakenItStopsTrying) {
  std::mutex mu;
  int calls = 0;
  std::promise<void> retried;
  bool told = false;
  auto r = ListenRetry::Start(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        if (++calls == 2 && !told) {
          told = true;
          retried.set_value();
        }
        return Taken();
      },
      ListenRetry::Options{std::chrono::milliseconds(1), std::chrono::milliseconds(1)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)->listening());
  ASSERT_EQ(retried.get_future().wait_for(60s), std::future_status::ready);
  r->reset();  // returns: the retry thread saw the stop and was joined
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_GE(calls, 2);
}

}  // namespace
}  // namespace rdmak8s::node
