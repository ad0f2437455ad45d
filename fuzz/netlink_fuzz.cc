// Fuzz target: the generic netlink layer every decoder stands on (rdmak8s/netlink/netlink_codec.h):
// SplitMessages over a datagram, ParseAttrs over a message body, ParseAck over NLMSG_ERROR
// (with and without the extended ACK TLVs). Input: the bytes of one recvmsg(2), as a hostile
// or buggy kernel could send them.
//
// Invariants beyond "no crash, no sanitizer report" (ASan checks no read past the buffer):
//   - every message payload and attribute payload lies inside the bytes it was cut from;
//   - re-encoding what was decoded with MessageBuilder and decoding again gives the same
//     messages (type, flags, seq, port, payload) and attributes (type, payload);
//   - a failed request's Status is an error carrying the kernel's errno.
#include <linux/netlink.h>

#include <algorithm>

#include "fuzz/fuzz_check.h"
#include "rdmak8s/netlink/netlink_codec.h"

namespace {

using namespace rdmak8s;

bool Inside(std::span<const uint8_t> part, std::span<const uint8_t> whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

bool SameBytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

void CheckAttrs(std::span<const uint8_t> data) {
  auto attrs = nl::ParseAttrs(data);
  if (!attrs.ok()) {
    FUZZ_CHECK(attrs.status().code() == StatusCode::kInvalidArgument, attrs.status().ToString());
    return;
  }
  nl::MessageBuilder b(0x10, 0, 0);
  for (const nl::Attr& a : *attrs) {
    FUZZ_CHECK(Inside(a.payload, data), "attribute payload outside its buffer");
    FUZZ_CHECK((a.type & ~NLA_TYPE_MASK) == 0, std::to_string(a.type));
    (void)a.U8(), (void)a.U16(), (void)a.U32(), (void)a.U64(), (void)a.String();
    b.PutBytes(a.type, a.payload.data(), a.payload.size());
  }
  const std::vector<uint8_t> bytes = std::move(b).Finish();
  auto again = nl::ParseAttrs(std::span<const uint8_t>(bytes).subspan(NLMSG_HDRLEN));
  FUZZ_CHECK(again.ok() && again->size() == attrs->size(), "re-encoded attributes");
  for (size_t i = 0; i < attrs->size(); ++i) {
    FUZZ_CHECK((*again)[i].type == (*attrs)[i].type &&
                   SameBytes((*again)[i].payload, (*attrs)[i].payload),
               "attribute " + std::to_string(i) + " changed in a round trip");
  }
}

void CheckAck(const nl::Message& m) {
  auto ack = nl::ParseAck(m);
  if (!ack.ok()) {
    FUZZ_CHECK(ack.status().code() == StatusCode::kInvalidArgument, ack.status().ToString());
    return;
  }
  if (ack->error == 0) return;  // an ACK: AckToStatus is for failed requests only
  Status s = nl::AckToStatus(*ack, "request");
  FUZZ_CHECK(!s.ok() && s.sys_errno() == ack->error, s.ToString());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  CheckAttrs(bytes);
  for (uint16_t flags : {0, NLM_F_ACK_TLVS, NLM_F_ACK_TLVS | NLM_F_CAPPED}) {
    CheckAck(nl::Message{NLMSG_ERROR, flags, 1, 0, bytes});
  }
  auto msgs = nl::SplitMessages(bytes);
  if (!msgs.ok()) {
    FUZZ_CHECK(msgs.status().code() == StatusCode::kInvalidArgument, msgs.status().ToString());
    return 0;
  }
  for (const nl::Message& m : *msgs) {
    FUZZ_CHECK(Inside(m.payload, bytes), "message payload outside the datagram");
    CheckAttrs(m.payload);
    CheckAck(m);
    nl::MessageBuilder b(m.type, m.flags, m.seq, m.port);
    b.AppendHeader(m.payload.data(), m.payload.size());
    const std::vector<uint8_t> one = std::move(b).Finish();
    auto again = nl::SplitMessages(one);
    FUZZ_CHECK(again.ok() && again->size() == 1, "re-encoded message does not split");
    const nl::Message& r = (*again)[0];
    FUZZ_CHECK(r.type == m.type && r.flags == m.flags && r.seq == m.seq && r.port == m.port,
               "message header changed in a round trip");
    // AppendHeader pads to 4: the payload comes back padded, its bytes unchanged.
    FUZZ_CHECK(r.payload.size() == NLMSG_ALIGN(m.payload.size()) &&
                   SameBytes(r.payload.first(m.payload.size()), m.payload),
               "message payload changed in a round trip");
  }
  return 0;
}
