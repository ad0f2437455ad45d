// LinkMonitor against the real kernel, in a throwaway netns (needs root).
#include <poll.h>
#include <sys/socket.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rdmak8s/netlink/route_netlink.h"
#include "support/throwaway_netns.h"

namespace rdmak8s {
namespace {

using testing::NewThrowawayNetns;
using testing::ShIn;

class LinkMonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ns = NewThrowawayNetns();
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    ns_ = std::move(*ns);
    Status s = RunInNetns(ns_, [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(mon_, NewLinkMonitor());
      return Status::Ok();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Polls and reads until `pred` holds on the events seen so far (bounded wait, not a timing
  // assertion: the kernel sends these synchronously with the change).
  bool WaitFor(const std::function<bool()>& pred) {
    for (int i = 0; i < 50 && !pred(); ++i) {
      pollfd p{mon_->fd(), POLLIN, 0};
      if (poll(&p, 1, 100) < 0) return false;
      Status s = mon_->ReadEvents([&](const LinkEvent& ev) { events_.push_back(ev); });
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    return pred();
  }
  bool Saw(LinkEvent::Type type, const std::string& name, std::optional<bool> admin_up = {}) {
    for (const auto& ev : events_) {
      if (ev.type == type && ev.link.name == name &&
          (!admin_up || ev.link.admin_up == *admin_up)) {
        return true;
      }
    }
    return false;
  }

  Netns ns_;
  std::unique_ptr<LinkMonitor> mon_;
  std::vector<LinkEvent> events_;
};

TEST_F(LinkMonitorTest, ReadEventsWithNothingQueuedReturnsAtOnce) {
  int calls = 0;
  Status s = mon_->ReadEvents([&](const LinkEvent&) { ++calls; });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(calls, 0);
}

TEST_F(LinkMonitorTest, SeesNewUpDownAndDelOfALink) {
  ASSERT_TRUE(ShIn(ns_, "ip link add m0 type veth peer name m1").ok());
  EXPECT_TRUE(WaitFor([&] { return Saw(LinkEvent::Type::kNew, "m0"); }));
  ASSERT_TRUE(ShIn(ns_, "ip link set m0 up").ok());
  EXPECT_TRUE(WaitFor([&] { return Saw(LinkEvent::Type::kNew, "m0", true); }));
  ASSERT_TRUE(ShIn(ns_, "ip link set m0 down").ok());
  events_.clear();
  EXPECT_TRUE(WaitFor([&] { return Saw(LinkEvent::Type::kNew, "m0", false); }));
  ASSERT_TRUE(ShIn(ns_, "ip link del m0").ok());
  EXPECT_TRUE(WaitFor([&] { return Saw(LinkEvent::Type::kDel, "m0"); }));
  EXPECT_TRUE(WaitFor([&] { return Saw(LinkEvent::Type::kDel, "m1"); }));
}

TEST_F(LinkMonitorTest, OnlySeesItsOwnNetns) {
  auto other = NewThrowawayNetns();
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(ShIn(*other, "ip link add x0 type veth peer name x1").ok());
  ASSERT_TRUE(ShIn(ns_, "ip link add m0 type veth peer name m1").ok());
  ASSERT_TRUE(WaitFor([&] { return Saw(LinkEvent::Type::kNew, "m1"); }));
  EXPECT_FALSE(Saw(LinkEvent::Type::kNew, "x0"));
}

TEST_F(LinkMonitorTest, OverrunIsReportedAsUnavailableAndTheStreamRecovers) {
  // Shrink the receive buffer to the minimum, then make more events than it can hold.
  int tiny = 1;
  ASSERT_EQ(setsockopt(mon_->fd(), SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny)), 0);
  ASSERT_TRUE(ShIn(ns_, "for i in 0 1 2 3 4 5 6 7 8 9; do ip link add o$i type veth peer name "
                        "p$i; ip link set o$i up; ip link set o$i down; done")
                  .ok());
  Status s;
  for (int i = 0; i < 100 && s.ok(); ++i) {
    s = mon_->ReadEvents([](const LinkEvent&) {});
    if (s.ok()) {
      pollfd p{mon_->fd(), POLLIN, 0};
      if (poll(&p, 1, 0) == 0) break;
    }
  }
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  // After an overrun the caller re-reads state; the stream itself keeps working.
  int big = 1 << 20;
  ASSERT_EQ(setsockopt(mon_->fd(), SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)), 0);
  Status drained = mon_->ReadEvents([](const LinkEvent&) {});
  EXPECT_TRUE(drained.ok()) << drained.ToString();
  events_.clear();
  ASSERT_TRUE(ShIn(ns_, "ip link del o0").ok());
  EXPECT_TRUE(WaitFor([&] { return Saw(LinkEvent::Type::kDel, "o0"); }));
}

}  // namespace
}  // namespace rdmak8s
