// Pure netlink message encoding and decoding (no sockets): the generic layer under the RDMA nldev
// and DCB codecs. Layout per include/uapi/linux/netlink.h: struct nlmsghdr, then the family
// header, then attributes (struct nlattr: u16 len, u16 type, payload padded to 4 bytes). Values
// are in host byte order, as netlink carries them.
//
// Thread safety: plain values and functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s::nl {

// Builds one netlink message. Usage: MessageBuilder b(type, flags, seq); b.AppendHeader(...);
// b.PutU32(...); auto bytes = b.Finish();
class MessageBuilder {
 public:
  MessageBuilder(uint16_t type, uint16_t flags, uint32_t seq, uint32_t port = 0);
  // A family header (struct dcbmsg, struct ifinfomsg...), padded to 4 bytes.
  void AppendHeader(const void* data, size_t len);
  void PutU8(uint16_t type, uint8_t v);
  void PutU16(uint16_t type, uint16_t v);
  void PutU32(uint16_t type, uint32_t v);
  void PutU64(uint16_t type, uint64_t v);
  // NUL-terminated string attribute (NLA_NUL_STRING).
  void PutString(uint16_t type, std::string_view s);
  void PutBytes(uint16_t type, const void* data, size_t len);
  // Opens a nested attribute; pass the returned token to EndNested.
  size_t BeginNested(uint16_t type);
  void EndNested(size_t token);
  // The message with nlmsg_len set.
  std::vector<uint8_t> Finish() &&;

 private:
  std::vector<uint8_t> buf_;
};

struct Attr {
  uint16_t type = 0;  // without NLA_F_NESTED / NLA_F_NET_BYTEORDER
  std::span<const uint8_t> payload;

  std::optional<uint8_t> U8() const;
  std::optional<uint16_t> U16() const;
  std::optional<uint32_t> U32() const;
  std::optional<uint64_t> U64() const;
  // The payload up to its first NUL.
  std::string String() const;
};

// Names an attribute type for error messages ("IFLA_MTU"); nullptr when it has no name.
using AttrNamer = const char* (*)(uint16_t type);

// The attributes in `data`, in order. kInvalidArgument when an attribute's length runs past the
// buffer or is shorter than its header; the message names the attribute by `namer` when given
// and it knows the type, else by number.
StatusOr<std::vector<Attr>> ParseAttrs(std::span<const uint8_t> data, AttrNamer namer = nullptr);
// The first attribute of `type`, if any.
const Attr* FindAttr(const std::vector<Attr>& attrs, uint16_t type);

// One message of a datagram.
struct Message {
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t seq = 0;
  uint32_t port = 0;
  std::span<const uint8_t> payload;  // after struct nlmsghdr
};

// Splits a datagram into messages. kInvalidArgument on truncation.
StatusOr<std::vector<Message>> SplitMessages(std::span<const uint8_t> datagram);

// An NLMSG_ERROR message: error is a positive errno (0 = ACK); extack is NLMSGERR_ATTR_MSG when
// the kernel sent one (NLM_F_ACK_TLVS).
struct Ack {
  int error = 0;
  std::string extack;
};
// kInvalidArgument when m is not NLMSG_ERROR, is truncated, or its error is INT32_MIN.
StatusOr<Ack> ParseAck(const Message& m);

// The Status for a failed request: ErrnoError(error, what) with " (kernel: <extack>)" appended
// when present, and sys_errno() set.
Status AckToStatus(const Ack& ack, std::string_view what);

}  // namespace rdmak8s::nl
