#include "rdmak8s/netlink/netlink_codec.h"

#include <linux/netlink.h>

#include <cstdint>
#include <cstring>

namespace rdmak8s::nl {
namespace {

constexpr size_t Align4(size_t n) { return (n + 3) & ~size_t{3}; }

template <typename T>
std::optional<T> Read(std::span<const uint8_t> p) {
  if (p.size() < sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, p.data(), sizeof(T));
  return v;
}

}  // namespace

MessageBuilder::MessageBuilder(uint16_t type, uint16_t flags, uint32_t seq, uint32_t port) {
  nlmsghdr h{};
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  h.nlmsg_pid = port;
  buf_.resize(sizeof(h));
  std::memcpy(buf_.data(), &h, sizeof(h));
}

void MessageBuilder::AppendHeader(const void* data, size_t len) {
  size_t at = buf_.size();
  buf_.resize(at + Align4(len), 0);
  std::memcpy(buf_.data() + at, data, len);
}

void MessageBuilder::PutBytes(uint16_t type, const void* data, size_t len) {
  nlattr a{};
  a.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  a.nla_type = type;
  size_t at = buf_.size();
  buf_.resize(at + NLA_HDRLEN + Align4(len), 0);
  std::memcpy(buf_.data() + at, &a, sizeof(a));
  if (len) std::memcpy(buf_.data() + at + NLA_HDRLEN, data, len);
}

void MessageBuilder::PutU8(uint16_t type, uint8_t v) { PutBytes(type, &v, 1); }
void MessageBuilder::PutU16(uint16_t type, uint16_t v) { PutBytes(type, &v, 2); }
void MessageBuilder::PutU32(uint16_t type, uint32_t v) { PutBytes(type, &v, 4); }
void MessageBuilder::PutU64(uint16_t type, uint64_t v) { PutBytes(type, &v, 8); }
void MessageBuilder::PutString(uint16_t type, std::string_view s) {
  std::string z(s);
  PutBytes(type, z.c_str(), z.size() + 1);
}

size_t MessageBuilder::BeginNested(uint16_t type) {
  size_t at = buf_.size();
  PutBytes(static_cast<uint16_t>(type | NLA_F_NESTED), nullptr, 0);
  return at;
}

void MessageBuilder::EndNested(size_t token) {
  uint16_t len = static_cast<uint16_t>(buf_.size() - token);
  std::memcpy(buf_.data() + token, &len, sizeof(len));
}

std::vector<uint8_t> MessageBuilder::Finish() && {
  uint32_t len = static_cast<uint32_t>(buf_.size());
  std::memcpy(buf_.data(), &len, sizeof(len));
  return std::move(buf_);
}

std::optional<uint8_t> Attr::U8() const { return Read<uint8_t>(payload); }
std::optional<uint16_t> Attr::U16() const { return Read<uint16_t>(payload); }
std::optional<uint32_t> Attr::U32() const { return Read<uint32_t>(payload); }
std::optional<uint64_t> Attr::U64() const { return Read<uint64_t>(payload); }
std::string Attr::String() const {
  const char* p = reinterpret_cast<const char*>(payload.data());
  return std::string(p, strnlen(p, payload.size()));
}

StatusOr<std::vector<Attr>> ParseAttrs(std::span<const uint8_t> data, AttrNamer namer) {
  std::vector<Attr> out;
  size_t off = 0;
  while (off + NLA_HDRLEN <= data.size()) {
    nlattr a;
    std::memcpy(&a, data.data() + off, sizeof(a));
    if (a.nla_len < NLA_HDRLEN || off + a.nla_len > data.size()) {
      const uint16_t type = a.nla_type & NLA_TYPE_MASK;
      const char* name = namer != nullptr ? namer(type) : nullptr;
      return InvalidArgumentError(
          "netlink attribute " +
          (name != nullptr ? std::string(name) : "type " + std::to_string(type)) +
          " at offset " + std::to_string(off) + " has bad length " + std::to_string(a.nla_len));
    }
    out.push_back(Attr{static_cast<uint16_t>(a.nla_type & NLA_TYPE_MASK),
                       data.subspan(off + NLA_HDRLEN, a.nla_len - NLA_HDRLEN)});
    off += Align4(a.nla_len);
  }
  return out;
}

const Attr* FindAttr(const std::vector<Attr>& attrs, uint16_t type) {
  for (const auto& a : attrs) {
    if (a.type == type) return &a;
  }
  return nullptr;
}

StatusOr<std::vector<Message>> SplitMessages(std::span<const uint8_t> datagram) {
  std::vector<Message> out;
  size_t off = 0;
  while (off + NLMSG_HDRLEN <= datagram.size()) {
    nlmsghdr h;
    std::memcpy(&h, datagram.data() + off, sizeof(h));
    if (h.nlmsg_len < NLMSG_HDRLEN || off + h.nlmsg_len > datagram.size()) {
      return InvalidArgumentError("netlink message at offset " + std::to_string(off) +
                                  " has bad length " + std::to_string(h.nlmsg_len));
    }
    out.push_back(Message{h.nlmsg_type, h.nlmsg_flags, h.nlmsg_seq, h.nlmsg_pid,
                          datagram.subspan(off + NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN)});
    off += NLMSG_ALIGN(h.nlmsg_len);
  }
  if (off < datagram.size()) {
    return InvalidArgumentError("netlink datagram has " + std::to_string(datagram.size() - off) +
                                " trailing bytes that are not a whole message");
  }
  return out;
}

StatusOr<Ack> ParseAck(const Message& m) {
  if (m.type != NLMSG_ERROR) return InvalidArgumentError("not an NLMSG_ERROR message");
  auto err = Read<int32_t>(m.payload);
  if (!err) return InvalidArgumentError("truncated NLMSG_ERROR message");
  // The kernel sends 0 or a negative errno; INT32_MIN has no positive errno (negating it is
  // undefined behaviour), found by fuzz/netlink_fuzz.cc.
  if (*err == INT32_MIN) return InvalidArgumentError("NLMSG_ERROR error out of range");
  Ack ack;
  ack.error = -*err;
  if (!(m.flags & NLM_F_ACK_TLVS)) return ack;
  // struct nlmsgerr carries the request's header, or the whole request unless NLM_F_CAPPED.
  auto orig = Read<nlmsghdr>(m.payload.subspan(sizeof(int32_t)));
  if (!orig) return InvalidArgumentError("truncated NLMSG_ERROR message");
  size_t tlv_off = sizeof(int32_t) + ((m.flags & NLM_F_CAPPED) ? sizeof(nlmsghdr)
                                                                : NLMSG_ALIGN(orig->nlmsg_len));
  if (tlv_off > m.payload.size()) return InvalidArgumentError("truncated NLMSG_ERROR extack");
  auto attrs = ParseAttrs(m.payload.subspan(tlv_off));
  if (!attrs.ok()) return attrs.status().Prepend("NLMSG_ERROR extack");
  if (const Attr* msg = FindAttr(*attrs, NLMSGERR_ATTR_MSG)) ack.extack = msg->String();
  return ack;
}

Status AckToStatus(const Ack& ack, std::string_view what) {
  Status s = ErrnoError(ack.error, what);
  if (!ack.extack.empty()) {
    s = Status(s.code(), s.message() + " (kernel: " + ack.extack + ")");
  }
  return s.WithErrno(ack.error);
}

}  // namespace rdmak8s::nl
