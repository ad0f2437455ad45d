// NetlinkChannel: the one place that does netlink socket I/O for rdmak8s (RDMA nldev, DCB,
// rtnetlink requests and the link event stream). It carries bytes built by the pure codecs
// (netlink_codec.h and friends) over a plain AF_NETLINK socket and hands back reply messages.
//
// Thread safety: one instance per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netlink_codec.h"

namespace rdmak8s::internal {

class NetlinkChannel {
 public:
  // Opens a netlink socket of `protocol` in the calling thread's netns, with extended ACKs on.
  // `name` ("rtnetlink", "RDMA netlink") goes into error messages. When the kernel lacks the
  // protocol (EPROTONOSUPPORT) the Status is kUnavailable "<name> not available: ...".
  static StatusOr<std::unique_ptr<NetlinkChannel>> Open(int protocol, std::string_view name);
  ~NetlinkChannel();
  NetlinkChannel(const NetlinkChannel&) = delete;
  NetlinkChannel& operator=(const NetlinkChannel&) = delete;

  int fd() const;
  // Joins a multicast group and makes reads non-blocking (for event streams).
  Status Subscribe(uint32_t group);

  // Sends `request` (its nlmsg_seq and nlmsg_pid are overwritten) and calls on_reply for every
  // reply message with the same sequence number until NLMSG_DONE (dumps) or the ACK (requests
  // must carry NLM_F_ACK or NLM_F_DUMP); replies with another sequence number (a stale answer
  // left on the socket) are skipped. A kernel error, in an NLMSG_ERROR or in the NLMSG_DONE that
  // ends a dump, becomes nl::AckToStatus(ack, what) with the kernel's extended-ACK text.
  // If on_reply fails, the rest of the answer is still drained and its Status is returned.
  Status Transact(std::vector<uint8_t> request,
                  const std::function<Status(const nl::Message&)>& on_reply,
                  std::string_view what);

  // Non-blocking: every message already queued, then OK. kUnavailable with sys_errno() ENOBUFS
  // when the kernel dropped messages (re-read state); reported once, the next Drain goes on with
  // what is queued. A message is valid only inside on_message.
  Status Drain(const std::function<void(const nl::Message&)>& on_message);

 private:
  NetlinkChannel(int fd, uint32_t port, uint32_t first_seq, std::string name)
      : fd_(fd), port_(port), next_seq_(first_seq), name_(std::move(name)) {}
  // One datagram; 0 bytes with OK when non-blocking and nothing is queued.
  Status Receive(std::vector<uint8_t>& buf, bool nonblocking, size_t& len);
  // The Status for a failed recv(2): kUnavailable (ENOBUFS: messages lost), kDeadlineExceeded
  // (EAGAIN on a blocking read: SO_RCVTIMEO), else the errno's.
  Status ReceiveError(int err) const;

  int fd_;
  uint32_t port_;      // the socket's netlink port id, assigned by the kernel at bind(2)
  uint32_t next_seq_;  // sequence number of the next request
  std::string name_;
};

}  // namespace rdmak8s::internal
