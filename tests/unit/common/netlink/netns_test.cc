#include "rdmak8s/netlink/netns.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/throwaway_netns.h"

namespace rdmak8s {
namespace {

using ::testing::HasSubstr;
using testing::NewThrowawayNetns;

TEST(OpenNetnsTest, MissingPathIsNotFound) {
  auto ns = OpenNetns("/var/run/netns/rdmak8s-no-such-netns-" + std::to_string(getpid()));
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(ns.status().message(), HasSubstr("rdmak8s-no-such-netns"));
}

TEST(OpenNetnsTest, RegularFileIsInvalidArgument) {
  auto ns = OpenNetns("/proc/self/status");
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ns.status().message(), HasSubstr("/proc/self/status"));
}

TEST(OpenNetnsTest, OtherNamespaceTypeIsInvalidArgument) {
  auto ns = OpenNetns("/proc/self/ns/uts");
  ASSERT_FALSE(ns.ok());
  EXPECT_EQ(ns.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ns.status().message(), HasSubstr("not a network namespace"));
}

TEST(OpenNetnsTest, OpensByPathTheSameNamespace) {
  auto made = NewThrowawayNetns();
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  auto again = OpenNetns(made->path());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->SameAs(*made));
  auto current = CurrentNetns();
  ASSERT_TRUE(current.ok());
  EXPECT_FALSE(current->SameAs(*made));
}

TEST(NetnsTest, MoveTransfersTheFd) {
  auto made = NewThrowawayNetns();
  ASSERT_TRUE(made.ok());
  int fd = made->fd();
  Netns moved = std::move(*made);
  EXPECT_EQ(moved.fd(), fd);
  EXPECT_FALSE(made->valid());
}

TEST(RunInNetnsTest, RunsInsideAndComesBack) {
  auto target = NewThrowawayNetns();
  ASSERT_TRUE(target.ok());
  auto before = CurrentNetns();
  ASSERT_TRUE(before.ok());
  bool inside = false;
  Status s = RunInNetns(*target, [&]() -> Status {
    auto here = CurrentNetns();
    if (!here.ok()) return here.status();
    inside = here->SameAs(*target);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(inside);
  auto after = CurrentNetns();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->SameAs(*before));
}

TEST(RunInNetnsTest, ReturnsTheFunctionsErrorAndStillComesBack) {
  auto target = NewThrowawayNetns();
  ASSERT_TRUE(target.ok());
  auto before = CurrentNetns();
  ASSERT_TRUE(before.ok());
  Status s = RunInNetns(*target, [] { return NotFoundError("inner thing"); });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "inner thing");
  auto after = CurrentNetns();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->SameAs(*before));
}

TEST(RunInNetnsTest, InvalidNetnsIsRejectedWithoutRunning) {
  bool ran = false;
  Status s = RunInNetns(Netns(), [&] {
    ran = true;
    return Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ran);
}

// Drops CAP_SYS_ADMIN from this thread's effective set, so setns(2) fails with EPERM.
bool DropSysAdmin() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  data[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
  return syscall(SYS_capset, &hdr, data) == 0;
}

TEST(RunInNetnsDeathTest, AbortsWhenItCannotReturnToTheOriginalNetns) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto target = NewThrowawayNetns();
  ASSERT_TRUE(target.ok());
  EXPECT_DEATH(
      {
        Status s = RunInNetns(*target, [] {
          return DropSysAdmin() ? Status::Ok() : InternalError("capset");
        });
        s.IgnoreError();  // not reached: RunInNetns aborts
      },
      "FATAL: setns back");
}

}  // namespace
}  // namespace rdmak8s
