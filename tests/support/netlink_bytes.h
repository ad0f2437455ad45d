// Netlink bytes written out by hand for the codec tests, independently of the codecs under test
// (include/uapi/linux/netlink.h: struct nlattr is u16 len, u16 type, payload padded to 4).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include <gtest/gtest.h>

#include "rdmak8s/netlink/netlink_codec.h"

namespace rdmak8s::testing {

using Bytes = std::vector<uint8_t>;

// Byte-wise appends: GCC 12 mis-warns (-Warray-bounds) on vector::insert of tiny vectors.
inline Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) {
    for (uint8_t b : p) out.push_back(b);
  }
  return out;
}

// One attribute: u16 len, u16 type, payload, pad to 4.
inline Bytes A(uint16_t type, Bytes payload) {
  uint16_t len = static_cast<uint16_t>(4 + payload.size());
  Bytes out = {static_cast<uint8_t>(len & 0xff), static_cast<uint8_t>(len >> 8),
               static_cast<uint8_t>(type & 0xff), static_cast<uint8_t>(type >> 8)};
  for (uint8_t b : payload) out.push_back(b);
  while (out.size() % 4) out.push_back(0);
  return out;
}

// A nested attribute (NLA_F_NESTED) holding `inner`.
inline Bytes Nest(uint16_t type, std::initializer_list<Bytes> inner) {
  return A(type | 0x8000, Cat(inner));
}

// The one message of a datagram (a test failure when there is not exactly one).
inline nl::Message OnlyMessage(const Bytes& datagram) {
  auto msgs = nl::SplitMessages(datagram);
  EXPECT_TRUE(msgs.ok()) << msgs.status().ToString();
  EXPECT_EQ(msgs->size(), 1u);
  return msgs->at(0);
}

}  // namespace rdmak8s::testing
