// DeviceNameIndex: a pool's device names -> their position, for the one look-up per available ID
// that GetPreferredAllocation makes (a shared pool of 1,024 devices x 100 IDs sends 102,400 of
// them per request, so the look-up is the request's cost; `make bench` prints it).
//
// How it stays cheap: a name is keyed by its bytes themselves, not by a hash over them. A shared
// ID "<rdma_dev>-<k>" is cut at its last '-', found among the ID's last 8 bytes with one word
// (or SSE2) compare, not a byte loop. The usual names (mlx5_123, rxe0, irdma3) are of at most 8
// bytes: such a name is its first word, zero-filled, plus its length, and a table of those alone
// (ShortSlot: one multiply to hash, one slot of 16 bytes to compare) answers most IDs. A name of
// 9 to 16 bytes is two words (its first 8 bytes and its last 8) plus its length, in a second
// table; names longer than 16 bytes and IDs whose '-' is further from their end take a general
// path that compares the whole name.
//
// Immutable after construction; safe to share between threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rdmak8s::dp {

class DeviceNameIndex {
  // A name of 1 to 8 bytes: its bytes zero-filled to a word, and its length (the two determine
  // the name, NUL bytes included).
  struct ShortSlot {
    uint64_t key = 0;
    int32_t index = -1;  // -1: empty
    uint32_t last = 0;   // the length - 1 (what the look-up computes)
  };

 public:
  // names[i] is found as i. A name given twice is found at its first position.
  explicit DeviceNameIndex(std::vector<std::string> names);

  // The position of the device named `name`; -1 when no device has that name.
  int Find(std::string_view name) const;

  // DeviceOfSharedId as a value holding what it reads (the short names' table), for a loop over
  // many IDs: a copy the loop keeps in registers, where the index's own fields would be read
  // again after every store the loop makes (the compiler cannot tell them apart). Valid while
  // the index lives.
  class SharedIdLookup {
   public:
    // The position of the device of a shared ID "<rdma_dev>-<k>" (the name is what comes before
    // the ID's last '-'); -1 when the ID has no '-' or names no device.
    [[gnu::always_inline]] int operator()(std::string_view id) const {
      const size_t size = id.size();
      if (size >= 8) [[likely]] {
        const char* p = id.data();
        const unsigned dashes = DashesOf8(p + size - 8);
        if (dashes != 0) [[likely]] {
          // The name's last byte: the one before the last '-' of the 8 (clz ^ 31 = 31 - clz,
          // as one bsr).
          const size_t last = size - 9 + (static_cast<unsigned>(__builtin_clz(dashes)) ^ 31u);
          if (last < 8) [[likely]] {
            const uint64_t key = Load8(p) & kLowBytes[last + 1];
            for (size_t at = static_cast<size_t>((key * kShortMul) >> shift_);; at = (at + 1) & mask_) {
              const ShortSlot& s = slots_[at];
              if (s.key == key && s.last == last) [[likely]] return s.index;
              if (s.index < 0) return -1;
            }
          }
        }
      }
      return index_->DeviceOfSharedIdSlow(id);
    }

   private:
    friend class DeviceNameIndex;
    const ShortSlot* slots_ = nullptr;
    size_t mask_ = 0;
    unsigned shift_ = 0;
    const DeviceNameIndex* index_ = nullptr;
  };
  SharedIdLookup SharedIds() const {
    SharedIdLookup l;
    l.slots_ = short_.data();
    l.mask_ = short_mask_;
    l.shift_ = short_shift_;
    l.index_ = this;
    return l;
  }

  // The position of the device of a shared ID "<rdma_dev>-<k>" (the name is what comes before
  // the ID's last '-'); -1 when the ID has no '-' or names no device.
  int DeviceOfSharedId(std::string_view id) const { return SharedIds()(id); }

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
  // Bit j set when p[j] is '-', for j < 8.
  [[gnu::always_inline]] static unsigned DashesOf8(const char* p) {
#if defined(__SSE2__)
    // The load zeroes the upper 8 bytes, which are then not '-': bits 8..15 are 0.
    const __m128i w = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, _mm_set1_epi8('-'))));
#else
    // Bit 7 of each '-' byte (exact per byte: no borrow crosses bytes), gathered to bits 0..7.
    const uint64_t x = Load8(p) ^ 0x2d2d2d2d2d2d2d2dull;
    const uint64_t high =
        ~(((x & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full) | x) & 0x8080808080808080ull;
    return static_cast<unsigned>(((high >> 7) * 0x0102040810204080ull) >> 56);
#endif
  }
  // kLowBytes[n]: the low n bytes of a word.
  static constexpr uint64_t kLowBytes[9] = {0,
                                            0xffull,
                                            0xffffull,
                                            0xffffffull,
                                            0xffffffffull,
                                            0xffffffffffull,
                                            0xffffffffffffull,
                                            0xffffffffffffffull,
                                            ~0ull};
  // Fibonacci hashing: the product's top bits depend on every bit of the key.
  static constexpr uint64_t kShortMul = 0x9e3779b97f4a7c15ull;
  static uint64_t Mix(uint64_t a, uint64_t b) {
    __uint128_t m = static_cast<__uint128_t>(a ^ 0x9e3779b97f4a7c15ull) * (b ^ 0xc2b2ae3d27d4eb4full);
    return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
  }
  // What SharedIdLookup does not answer itself: IDs under 8 bytes, IDs whose last '-' is not
  // among their last 8 bytes, names of no byte or more than 8.
  int DeviceOfSharedIdSlow(std::string_view id) const;
  // A name of up to 16 bytes: its slot, or the first empty one after it.
  int Lookup(uint64_t w0, uint64_t w1, size_t n) const {
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
  std::vector<Slot> slots_;  // every name
  size_t mask_ = 0;
  std::vector<ShortSlot> short_;  // the names of 1 to 8 bytes again, for SharedIdLookup
  size_t short_mask_ = 0;
  unsigned short_shift_ = 0;
};

}  // namespace rdmak8s::dp
