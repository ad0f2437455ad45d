// DeviceNameIndex: a pool's device names -> their position, for the one look-up per available ID
// that GetPreferredAllocation makes (a shared pool of 1,024 devices x 100 IDs sends 102,400 of
// them per request, so the look-up is the request's cost; `make bench` prints it).
//
// How it stays cheap: a name is keyed by its bytes themselves, not by a hash over them. A shared
// ID "<rdma_dev>-<k>" is cut at its last '-', found among the ID's last 8 bytes with one word
// (or SSE2) compare, not a byte loop. The usual names (mlx5_123, rxe0, irdma3) are of at most 8
// bytes: such a name is its first word, zero-filled. Those names have a table of their own, the
// one the per-ID loop (DevicesOfSharedIds) reads, small enough to stay in L1 while 100,000 IDs
// stream past it: a slot is a 16-bit position, the key it must match is kept once per name
// (8 KiB of each for 1,024 names), and the key alone tells the length (the table holds no name
// ending in NUL; the look-up checks the ID's name does not either). Each name is in its home slot
// or not at all, the multiplier chosen when the index is built so that the names (usually all)
// get home slots of their own: a look-up is one multiply and one slot. Names of 9 to 16 bytes
// (udev's rocep59s0f0, mlx5_1000) have a second such table, keyed by their first and last words
// and checked with their length, which the look-up reads next, out of the loop. Anything else (a
// name that lost its slot, of no device, longer than 16 bytes) takes the general table, which
// holds every name: a name of up to 16 bytes is two words (its first 8 bytes and its last 8)
// plus its length; longer names and IDs whose '-' is further from their end take a path that
// compares the whole name.
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
  // The short names' table, as the look-ups read it: at[(key * mul) >> shift] is the position of
  // the name whose home slot that is, keys[pos] that name's key (its zero-filled first word);
  // an empty slot holds a position whose key is 0. The table holds no name that ends in a NUL
  // byte: then a key tells the name's length too (its last non-zero byte), provided the ID's
  // name does not end in NUL either, which the look-up checks (an empty slot's 0 matches no
  // such name's key).
  struct ShortTable {
    const uint16_t* at = nullptr;
    const uint64_t* keys = nullptr;
    uint64_t mul = 0;
    unsigned shift = 0;
  };

 public:
  // names[i] is found as i. A name given twice is found at its first position.
  explicit DeviceNameIndex(std::vector<std::string> names);
  // Not copied: its look-up reads its tables through pointers (kept behind a shared_ptr).
  DeviceNameIndex(const DeviceNameIndex&) = delete;
  DeviceNameIndex& operator=(const DeviceNameIndex&) = delete;

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
      const int pos = FindShort(table_, id);
      return pos >= 0 ? pos : index_->DeviceOfSharedIdSlow(id);
    }

   private:
    friend class DeviceNameIndex;
    ShortTable table_;
    const DeviceNameIndex* index_ = nullptr;
  };
  SharedIdLookup SharedIds() const {
    SharedIdLookup l;
    l.table_ = short_;
    l.index_ = this;
    return l;
  }

  // The pass GetPreferredAllocation makes over a shared pool's available IDs (Id: std::string or
  // std::string_view; D: uint16_t or uint32_t): dev[i] = the position of the device of ids[i]
  // (as DeviceOfSharedId), or `none` when it has none (none >= every position). One loop that
  // holds the short names' table in registers.
  template <typename Id, typename D>
  void DevicesOfSharedIds(const Id* ids, size_t count, D none, D* dev) const;

  // The position of the device of a shared ID "<rdma_dev>-<k>" (the name is what comes before
  // the ID's last '-'); -1 when the ID has no '-' or names no device.
  int DeviceOfSharedId(std::string_view id) const { return SharedIds()(id); }

  // How many names of 1 to 16 bytes (each name once) the short and medium names' tables left to
  // the general one: what a look-up of theirs costs more. For tests and benchmarks.
  size_t ShortNamesLeftOut() const { return short_left_out_; }

 private:
  // The position of the device of a shared ID found in the short names' table alone; -1 when it
  // is not there (the general table may still have it).
  [[gnu::always_inline]] static int FindShort(const ShortTable& t, std::string_view id) {
    const size_t size = id.size();
    if (size >= 8) [[likely]] {
      const char* p = id.data();
      const unsigned dashes = DashesOf8(p + size - 8);
      if (dashes != 0) [[likely]] {
        // The name's last byte: the one before the last '-' of the 8. 31 - clz is one bsr;
        // written so (unsigned, then widened) GCC 12 adds no sign extension after it.
        const unsigned dash = 31u - static_cast<unsigned>(__builtin_clz(dashes));
        const size_t last = size - 9 + dash;
        if (last < 8) [[likely]] {
          const uint64_t key = Load8(p) & kLowBytes[last + 1];
          // key > kLowBytes[last]: the name's last byte is not NUL.
          if (key > kLowBytes[last]) [[likely]] {
            const uint32_t pos = t.at[(key * t.mul) >> t.shift];
            if (t.keys[pos] == key) [[likely]] return static_cast<int>(pos);
          }
        }
      }
    }
    return -1;
  }

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
  // The short names' table's first multiplier (Fibonacci hashing: the product's top bits depend
  // on every bit of the key); BuildShortTable tries others after it.
  static constexpr uint64_t kShortMul = 0x9e3779b97f4a7c15ull;
  // How many multipliers BuildShortTable tries at most (it stops at one that leaves no name out).
  static constexpr int kShortMulTries = 64;
  static uint64_t Mix(uint64_t a, uint64_t b) {
    __uint128_t m = static_cast<__uint128_t>(a ^ 0x9e3779b97f4a7c15ull) * (b ^ 0xc2b2ae3d27d4eb4full);
    return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
  }
  // What FindShort does not answer: IDs under 8 bytes, IDs whose last '-' is not among their
  // last 8 bytes, names of no byte or more than 8 or ending in NUL, names the short table left
  // out (and short names of no device).
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
  // Fills the short_ and medium_ fields below; after the general table (Find tells a name given
  // twice).
  void BuildShortTables();
  // The key a name of 9 to 16 bytes hashes by: its first and last words together.
  static uint64_t MediumKey(uint64_t w0, uint64_t w1) { return w0 ^ (w1 * 0xc2b2ae3d27d4eb4full); }

  std::vector<std::string> names_;
  std::vector<Slot> slots_;  // every name
  size_t mask_ = 0;
  // The short names' table (ShortTable: short_ points into these). Positions [0, held), held =
  // min(names, 65,535), may be in it; position `held` is the empty slots'.
  std::vector<uint16_t> short_at_;
  std::vector<uint64_t> short_keys_;
  ShortTable short_;
  // The names of 9 to 16 bytes likewise (DeviceOfSharedIdSlow reads them first): slot
  // (MediumKey * medium_mul_) >> medium_shift_ of medium_at_ holds a position, whose name's first
  // and last words are medium_words_[2 pos] and [2 pos + 1] and its length medium_sizes_[pos]
  // (0 for none).
  std::vector<uint16_t> medium_at_;
  std::vector<uint64_t> medium_words_;
  std::vector<uint8_t> medium_sizes_;
  uint64_t medium_mul_ = 0;
  unsigned medium_shift_ = 0;
  size_t short_left_out_ = 0;
};

}  // namespace rdmak8s::dp
