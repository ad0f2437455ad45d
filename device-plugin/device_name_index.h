// DeviceNameIndex: a pool's device names -> their position, for the one look-up per available ID
// that GetPreferredAllocation makes (a shared pool of 1,024 devices x 100 IDs sends 102,400 of
// them per request, so the look-up is the request's cost; `make bench` prints it).
//
// How it stays cheap: a name is keyed by its bytes themselves, not by a hash over them. A name of
// up to 16 bytes is two words (its first 8 bytes, zero-filled, and its last 8 bytes when longer
// than 8) plus its length: that key determines the name, so a slot holding it needs no second
// compare. A shared ID "<rdma_dev>-<k>" is cut at its last '-' found in the ID's last 8 bytes
// with word operations, not a byte loop. Names longer than 16 bytes and IDs whose '-' is further
// from their end take a general path that compares the whole name.
//
// Immutable after construction; safe to share between threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace rdmak8s::dp {

class DeviceNameIndex {
 public:
  // names[i] is found as i. A name given twice is found at its first position.
  explicit DeviceNameIndex(std::vector<std::string> names);

  // The position of the device named `name`; -1 when no device has that name.
  int Find(std::string_view name) const;

  // The position of the device of a shared ID "<rdma_dev>-<k>" (the name is what comes before
  // the ID's last '-'); -1 when the ID has no '-' or names no device.
  [[gnu::always_inline]] int DeviceOfSharedId(std::string_view id) const {
    const size_t size = id.size();
    if (size >= 8) {
      const char* p = id.data();
      // The bytes of the last 8 that are '-' (bit 7 of each such byte set; exact per byte).
      const uint64_t x = Load8(p + size - 8) ^ 0x2d2d2d2d2d2d2d2dull;
      const uint64_t dashes =
          ~(((x & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full) | x) & 0x8080808080808080ull;
      if (dashes != 0) {
        const size_t n = size - 8 + static_cast<size_t>((63 - __builtin_clzll(dashes)) >> 3);
        if (n <= 16) {
          const uint64_t w0 = Load8(p) & (n >= 8 ? ~0ull : (1ull << (8 * n)) - 1);
          const uint64_t w1 = n > 8 ? Load8(p + n - 8) : 0;
          return Lookup(w0, w1, n);
        }
      }
    }
    const size_t dash = id.rfind('-');
    return dash == std::string_view::npos ? -1 : Find(id.substr(0, dash));
  }

 private:
  struct Slot {
    uint64_t w0 = 0, w1 = 0;
    uint32_t size = UINT32_MAX;  // UINT32_MAX: empty (no name has that length)
    int32_t index = -1;
  };

  static uint64_t Load8(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static uint64_t Mix(uint64_t a, uint64_t b) {
    __uint128_t m = static_cast<__uint128_t>(a ^ 0x9e3779b97f4a7c15ull) * (b ^ 0xc2b2ae3d27d4eb4full);
    return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
  }
  // A name of up to 16 bytes: its slot, or the first empty one after it.
  [[gnu::always_inline]] int Lookup(uint64_t w0, uint64_t w1, size_t n) const {
    size_t at = Mix(w0, w1 ^ n) & mask_;
    const Slot& s = slots_[at];
    if (((s.w0 ^ w0) | (s.w1 ^ w1) | (s.size ^ n)) == 0) [[likely]] return s.index;
    return Probe(w0, w1, n, at);
  }
  int Probe(uint64_t w0, uint64_t w1, size_t n, size_t at) const;
  // A name's slot key: as above for up to 16 bytes; a longer name uses its first 16 bytes (and
  // its length), and a slot matching that key is compared whole with the name.
  static void KeyOf(std::string_view name, uint64_t* w0, uint64_t* w1);

  std::vector<std::string> names_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace rdmak8s::dp
