#include "netlink/netlink_channel.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace rdmak8s::internal {

StatusOr<std::unique_ptr<NetlinkChannel>> NetlinkChannel::Open(int protocol,
                                                               std::string_view name) {
  const std::string n(name);
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  if (fd < 0) {
    int err = errno;
    if (err == EPROTONOSUPPORT || err == EAFNOSUPPORT) {
      return UnavailableError(n + " not available: socket(AF_NETLINK, " +
                              std::to_string(protocol) + "): " + std::strerror(err))
          .WithErrno(err);
    }
    return ErrnoError(err, "open " + n + " socket");
  }
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    int err = errno;
    close(fd);
    return ErrnoError(err, "bind " + n + " socket");
  }
  int one = 1;
  // Best effort: extended ACK text only improves error messages (Linux 4.12+).
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  // A kernel that never answers must not hang a CNI ADD forever.
  timeval tv{.tv_sec = 30, .tv_usec = 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  int rcvbuf = 1 << 20;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));

  // The kernel picked our port id at bind(2); replies carry it (or 0) in nlmsg_pid.
  socklen_t addr_len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &addr_len) != 0) {
    int err = errno;
    close(fd);
    return ErrnoError(err, "getsockname " + n + " socket");
  }
  // Sequence numbers start from the clock, as iproute2's rtnl_open (and libnl, used here
  // before) do; Transact filters replies by them.
  const auto first_seq = static_cast<uint32_t>(std::time(nullptr));
  return std::unique_ptr<NetlinkChannel>(new NetlinkChannel(fd, local.nl_pid, first_seq, n));
}

NetlinkChannel::~NetlinkChannel() { close(fd_); }

int NetlinkChannel::fd() const { return fd_; }

Status NetlinkChannel::Subscribe(uint32_t group) {
  int g = static_cast<int>(group);
  if (setsockopt(fd(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) != 0) {
    return ErrnoError(errno, "join " + name_ + " group " + std::to_string(group));
  }
  const int fl = fcntl(fd_, F_GETFL);
  if (fl < 0 || fcntl(fd_, F_SETFL, fl | O_NONBLOCK) != 0) {
    return ErrnoError(errno, "make " + name_ + " socket non-blocking");
  }
  return Status::Ok();
}

Status NetlinkChannel::ReceiveError(int err) const {
  if (err == ENOBUFS) {
    return UnavailableError(name_ + ": receive buffer overrun, messages lost (ENOBUFS)")
        .WithErrno(ENOBUFS);
  }
  if (err == EAGAIN) return DeadlineExceededError(name_ + ": no answer from the kernel");
  return ErrnoError(err, "receive from " + name_);
}

Status NetlinkChannel::Receive(std::vector<uint8_t>& buf, bool nonblocking, size_t& len) {
  len = 0;
  const int dontwait = nonblocking ? MSG_DONTWAIT : 0;
  for (;;) {
    // Peek the size first so a large dump message is never truncated.
    ssize_t n = recv(fd(), buf.data(), buf.size(), MSG_PEEK | MSG_TRUNC | dontwait);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (nonblocking && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::Ok();
      return ReceiveError(errno);
    }
    if (static_cast<size_t>(n) > buf.size()) buf.resize(static_cast<size_t>(n));
    // The kernel can overrun the socket between the peek and this read (a multicast message
    // arriving on a full queue sets the socket error, which the next recv reports): that is the
    // same loss of messages as above, not another kind of failure.
    n = recv(fd(), buf.data(), buf.size(), dontwait);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReceiveError(errno);
    }
    len = static_cast<size_t>(n);
    return Status::Ok();
  }
}

Status NetlinkChannel::Transact(std::vector<uint8_t> request,
                                const std::function<Status(const nl::Message&)>& on_reply,
                                std::string_view what) {
  if (request.size() < sizeof(nlmsghdr)) return InternalError("netlink request too short");
  const uint32_t seq = next_seq_++;
  nlmsghdr h;
  std::memcpy(&h, request.data(), sizeof(h));
  h.nlmsg_seq = seq;
  h.nlmsg_pid = 0;
  std::memcpy(request.data(), &h, sizeof(h));
  const uint32_t port = port_;

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  for (;;) {
    ssize_t n = sendto(fd(), request.data(), request.size(), 0,
                       reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel));
    if (n >= 0) break;
    if (errno == EINTR) continue;
    return ErrnoError(errno, std::string(what) + ": send to " + name_);
  }

  Status reply_status;
  std::vector<uint8_t> buf(32768);
  for (;;) {
    size_t len = 0;
    RDMAK8S_RETURN_IF_ERROR_CTX(Receive(buf, /*nonblocking=*/false, len), what);
    auto msgs = nl::SplitMessages(std::span<const uint8_t>(buf.data(), len));
    if (!msgs.ok()) return msgs.status().Prepend(std::string(what) + ": reply");
    for (const nl::Message& m : *msgs) {
      if (m.seq != seq || (m.port != 0 && m.port != port)) continue;  // stale or not ours
      if (m.type == NLMSG_NOOP) continue;
      if (m.type == NLMSG_ERROR) {
        auto ack = nl::ParseAck(m);
        if (!ack.ok()) return ack.status().Prepend(what);
        if (ack->error != 0) return nl::AckToStatus(*ack, what);
        return reply_status;
      }
      if (m.type == NLMSG_DONE) {
        // Since Linux 4.x the DONE payload carries the dump's error, if any, followed (with
        // NETLINK_EXT_ACK, flag NLM_F_ACK_TLVS) by the extended-ACK attributes, as after an
        // NLMSG_ERROR's header: the kernel's own words for the refusal.
        if (m.payload.size() >= sizeof(int32_t)) {
          int32_t err;
          std::memcpy(&err, m.payload.data(), sizeof(err));
          if (err < 0) {
            nl::Ack ack;
            ack.error = -err;
            if (m.flags & NLM_F_ACK_TLVS) {
              auto attrs = nl::ParseAttrs(m.payload.subspan(sizeof(int32_t)));
              if (attrs.ok()) {
                if (const nl::Attr* msg = nl::FindAttr(*attrs, NLMSGERR_ATTR_MSG)) {
                  ack.extack = msg->String();
                }
              }
            }
            return nl::AckToStatus(ack, what);
          }
        }
        return reply_status;
      }
      if (reply_status.ok()) reply_status = on_reply(m);
    }
  }
}

Status NetlinkChannel::Drain(const std::function<void(const nl::Message&)>& on_message) {
  std::vector<uint8_t> buf(32768);
  for (;;) {
    size_t len = 0;
    RDMAK8S_RETURN_IF_ERROR(Receive(buf, /*nonblocking=*/true, len));
    if (len == 0) return Status::Ok();
    auto msgs = nl::SplitMessages(std::span<const uint8_t>(buf.data(), len));
    if (!msgs.ok()) return msgs.status().Prepend(name_ + " event");
    for (const nl::Message& m : *msgs) on_message(m);
  }
}

}  // namespace rdmak8s::internal
