// NetlinkChannel against the real kernel (NETLINK_ROUTE in a throwaway netns; needs root): the
// sequence filter, a dump whose NLMSG_DONE carries an error, and receive-buffer overruns.
#include "netlink/netlink_channel.h"

#include <dlfcn.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/throwaway_netns.h"

namespace {
// recv(2) as the channel calls it, with one injectable fault: the next non-peeking recv on
// `g_overrun_on_read_fd` fails with ENOBUFS, as when the kernel overruns the socket between the
// channel's MSG_PEEK (size) and its read. The executable's definition wins over libc's for the
// static library linked into it; everything else goes to the real recv.
std::atomic<int> g_overrun_on_read_fd{-1};
}  // namespace

extern "C" ssize_t recv(int fd, void* buf, size_t len, int flags) {
  using RecvFn = ssize_t (*)(int, void*, size_t, int);
  static const RecvFn real = reinterpret_cast<RecvFn>(dlsym(RTLD_NEXT, "recv"));
  if ((flags & MSG_PEEK) == 0 && fd >= 0) {
    int want = fd;
    if (g_overrun_on_read_fd.compare_exchange_strong(want, -1)) {
      errno = ENOBUFS;
      return -1;
    }
  }
  return real(fd, buf, len, flags);
}

namespace rdmak8s::internal {
namespace {

using ::testing::HasSubstr;
using rdmak8s::testing::NewThrowawayNetns;
using rdmak8s::testing::ShIn;

// RTM_GETLINK for one ifindex (a request with ACK) or, with `dump`, for every link.
std::vector<uint8_t> GetLink(int ifindex, bool dump, uint32_t seq = 0) {
  nl::MessageBuilder b(RTM_GETLINK, NLM_F_REQUEST | (dump ? NLM_F_DUMP : NLM_F_ACK), seq);
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  b.AppendHeader(&ifi, sizeof(ifi));
  return std::move(b).Finish();
}

class NetlinkChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ns = NewThrowawayNetns();
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    ns_ = std::move(*ns);
    ch_ = Open();
    ASSERT_NE(ch_, nullptr);
  }
  void TearDown() override { g_overrun_on_read_fd = -1; }

  // A channel whose socket lives in the throwaway netns.
  std::unique_ptr<NetlinkChannel> Open() {
    std::unique_ptr<NetlinkChannel> ch;
    Status s = RunInNetns(ns_, [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(ch, NetlinkChannel::Open(NETLINK_ROUTE, "rtnetlink"));
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return ch;
  }

  // Drains until `done` holds (bounded: the kernel queues these synchronously with the change
  // that caused them). A message is only valid inside the callback.
  Status DrainUntil(const std::function<bool()>& done,
                    const std::function<void(const nl::Message&)>& on_message) {
    for (int i = 0; i < 50 && !done(); ++i) {
      pollfd p{ch_->fd(), POLLIN, 0};
      if (poll(&p, 1, 100) < 0) return ErrnoError(errno, "poll");
      RDMAK8S_RETURN_IF_ERROR(ch_->Drain(on_message));
    }
    return Status::Ok();
  }

  Netns ns_;
  std::unique_ptr<NetlinkChannel> ch_;
};

TEST_F(NetlinkChannelTest, TransactSkipsAStaleReplyWithAnotherSequenceNumber) {
  // A reply nobody read: the error ACK of an earlier request (no link 9999) is queued on the
  // socket, with its own sequence number, before our request is sent.
  std::vector<uint8_t> stale = GetLink(9999, /*dump=*/false, /*seq=*/0x5eed);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ASSERT_EQ(sendto(ch_->fd(), stale.data(), stale.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                   sizeof(kernel)),
            static_cast<ssize_t>(stale.size()));

  int links = 0;
  Status s = ch_->Transact(GetLink(1, /*dump=*/false),
                           [&](const nl::Message& m) {
                             if (m.type == RTM_NEWLINK) ++links;
                             return Status::Ok();
                           },
                           "get link 1");
  EXPECT_TRUE(s.ok()) << s.ToString();  // not the stale ENODEV
  EXPECT_EQ(links, 1);
}

TEST_F(NetlinkChannelTest, DumpWhoseDoneCarriesAnErrorFailsWithTheKernelsErrnoAndMessage) {
  // With strict checking, a link dump filtered by ifindex is refused by the dump itself: the
  // kernel ends it with an NLMSG_DONE whose payload is -EINVAL plus an extended-ACK message.
  int one = 1;
  ASSERT_EQ(setsockopt(ch_->fd(), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof(one)), 0);
  int replies = 0;
  Status s = ch_->Transact(GetLink(1, /*dump=*/true),
                           [&](const nl::Message&) {
                             ++replies;
                             return Status::Ok();
                           },
                           "dump links");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.sys_errno(), EINVAL);
  EXPECT_THAT(s.message(), HasSubstr("dump links"));
  EXPECT_THAT(s.message(), HasSubstr("(kernel: ")) << "the DONE's extended ACK text is lost";
  EXPECT_EQ(replies, 0);

  // The channel is still in step: the next request gets its own answer.
  int links = 0;
  Status again = ch_->Transact(GetLink(1, /*dump=*/false),
                               [&](const nl::Message& m) {
                                 if (m.type == RTM_NEWLINK) ++links;
                                 return Status::Ok();
                               },
                               "get link 1");
  EXPECT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(links, 1);
}

TEST_F(NetlinkChannelTest, DrainReportsAnOverrunAsLostMessagesAndGoesOnReading) {
  ASSERT_TRUE(ch_->Subscribe(RTNLGRP_LINK).ok());
  // The smallest receive buffer the kernel allows, then far more link events than it holds.
  int tiny = 1;
  ASSERT_EQ(setsockopt(ch_->fd(), SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny)), 0);
  ASSERT_TRUE(
      ShIn(ns_, "for i in $(seq 1 20); do ip link add a$i type veth peer name b$i || exit 1; done")
          .ok());

  Status s = ch_->Drain([](const nl::Message&) {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.sys_errno(), ENOBUFS);

  // The overrun is reported once; the socket then delivers what it still holds and new events.
  Status rest = ch_->Drain([](const nl::Message&) {});
  ASSERT_TRUE(rest.ok()) << rest.ToString();
  ASSERT_TRUE(ShIn(ns_, "ip link set a1 up").ok());
  bool saw_a1 = false;
  Status d = DrainUntil([&] { return saw_a1; }, [&](const nl::Message& m) {
    if (m.type != RTM_NEWLINK || m.payload.size() < sizeof(ifinfomsg)) return;
    auto attrs = nl::ParseAttrs(m.payload.subspan(NLMSG_ALIGN(sizeof(ifinfomsg))));
    if (!attrs.ok()) return;
    for (const auto& a : *attrs) saw_a1 |= a.type == IFLA_IFNAME && a.String() == "a1";
  });
  ASSERT_TRUE(d.ok()) << d.ToString();
  EXPECT_TRUE(saw_a1);
}

TEST_F(NetlinkChannelTest, AnOverrunBetweenPeekAndReadIsReportedAsLostMessagesToo) {
  ASSERT_TRUE(ch_->Subscribe(RTNLGRP_LINK).ok());
  ASSERT_TRUE(ShIn(ns_, "ip link add a1 type veth peer name b1").ok());
  pollfd p{ch_->fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);  // a bound, not a timing assertion: the event is queued
  g_overrun_on_read_fd = ch_->fd();
  Status s = ch_->Drain([](const nl::Message&) {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(s.sys_errno(), ENOBUFS);
  EXPECT_THAT(s.message(), HasSubstr("rtnetlink"));
}

}  // namespace
}  // namespace rdmak8s::internal
