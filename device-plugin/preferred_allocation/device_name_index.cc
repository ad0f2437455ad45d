#include "device-plugin/preferred_allocation/device_name_index.h"

#include <algorithm>

namespace rdmak8s::dp {

DeviceNameIndex::DeviceNameIndex(std::vector<std::string> names) : names_(std::move(names)) {
  // At most a quarter full: most look-ups find their name in the first slot they read.
  size_t cap = 16;
  while (cap < names_.size() * 4) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (Find(names_[i]) >= 0) continue;  // a name given twice: its first position
    uint64_t w0, w1;
    KeyOf(names_[i], &w0, &w1);
    size_t at = Mix(w0, w1 ^ names_[i].size()) & mask_;
    while (slots_[at].index >= 0) at = (at + 1) & mask_;
    slots_[at] = Slot{w0, w1, static_cast<uint32_t>(names_[i].size()), static_cast<int32_t>(i)};
  }
  BuildShortTables();
}

namespace {

// The multiplier for a table of 2^bits slots, slot (key * mul) >> (64 - bits), that leaves the
// fewest keys without a home slot of their own: the best of the first `tries` of a fixed
// sequence (a table built twice is the same table), stopping at one that leaves none. Device
// names are alike but for a few bytes (mlx5_0 ... mlx5_1023), which a multiply spreads evenly:
// for 1,000 such names in 4,096 slots, Fibonacci hashing's multiplier leaves 18 out, and one of
// the first 64 usually none. A try stops as soon as it is no better than the best so far.
uint64_t ChooseMultiplier(const std::vector<uint64_t>& keys, unsigned bits, uint64_t first, int tries) {
  const unsigned shift = 64 - bits;
  std::vector<uint32_t> taken(size_t{1} << bits, 0);  // == try + 1: taken in that try
  size_t best = SIZE_MAX;
  uint64_t best_mul = first, mul = first, state = first;
  for (int t = 0; t < tries && best > 0; ++t) {
    if (t > 0) {  // splitmix64
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      mul = (z ^ (z >> 31)) | 1;
    }
    const auto stamp = static_cast<uint32_t>(t + 1);
    size_t out = 0;
    for (uint64_t key : keys) {
      uint32_t& at = taken[(key * mul) >> shift];
      if (at != stamp) {
        at = stamp;
      } else if (++out >= best) {
        break;
      }
    }
    if (out < best) {
      best = out;
      best_mul = mul;
    }
  }
  return best_mul;
}

// Slots for `keys` (of positions pos) a quarter full, with the multiplier ChooseMultiplier
// picks: at[slot] = the position whose home slot it is, `none` for none. Returns how many were
// left out (their home slot another's).
size_t FillHomeSlots(const std::vector<uint64_t>& keys, const std::vector<uint32_t>& pos,
                     uint64_t first_mul, int tries, uint16_t none, std::vector<uint16_t>* at,
                     uint64_t* mul, unsigned* shift, std::vector<bool>* placed) {
  unsigned bits = 4;
  while ((size_t{1} << bits) < keys.size() * 4) ++bits;
  *shift = 64 - bits;
  *mul = ChooseMultiplier(keys, bits, first_mul, tries);
  at->assign(size_t{1} << bits, none);
  placed->assign(keys.size(), false);
  size_t left_out = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    uint16_t& slot = (*at)[(keys[k] * *mul) >> *shift];
    if (slot != none) {
      ++left_out;
      continue;
    }
    slot = static_cast<uint16_t>(pos[k]);
    (*placed)[k] = true;
  }
  return left_out;
}

}  // namespace

void DeviceNameIndex::BuildShortTables() {
  const size_t held = std::min(names_.size(), size_t{0xffff});  // positions a uint16_t holds
  // The names of 1 to 16 bytes, each name once (its first position). A name of up to 8 bytes
  // that ends in NUL (its key is a shorter name's) is left to the general table.
  std::vector<uint32_t> short_pos, medium_pos;
  std::vector<uint64_t> short_keys, medium_keys;
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::string& name = names_[i];
    const size_t n = name.size();
    if (n < 1 || n > 16 || Find(name) != static_cast<int>(i)) continue;
    if (i >= held || (n <= 8 && name.back() == '\0')) {
      ++short_left_out_;
      continue;
    }
    uint64_t w0, w1;
    KeyOf(name, &w0, &w1);
    (n <= 8 ? short_pos : medium_pos).push_back(static_cast<uint32_t>(i));
    (n <= 8 ? short_keys : medium_keys).push_back(n <= 8 ? w0 : MediumKey(w0, w1));
  }
  const auto none = static_cast<uint16_t>(held);
  std::vector<bool> placed;
  uint64_t mul;
  unsigned shift;
  short_left_out_ += FillHomeSlots(short_keys, short_pos, kShortMul, kShortMulTries, none,
                                   &short_at_, &mul, &shift, &placed);
  short_keys_.assign(held + 1, 0);
  for (size_t k = 0; k < short_pos.size(); ++k) {
    if (placed[k]) short_keys_[short_pos[k]] = short_keys[k];
  }
  short_ = ShortTable{short_at_.data(), short_keys_.data(), mul, shift};
  short_left_out_ += FillHomeSlots(medium_keys, medium_pos, kShortMul, kShortMulTries, none,
                                   &medium_at_, &medium_mul_, &medium_shift_, &placed);
  medium_words_.assign(2 * (held + 1), 0);
  medium_sizes_.assign(held + 1, 0);  // no medium name has 0 bytes
  for (size_t k = 0; k < medium_pos.size(); ++k) {
    if (!placed[k]) continue;
    const std::string& name = names_[medium_pos[k]];
    KeyOf(name, &medium_words_[2 * medium_pos[k]], &medium_words_[2 * medium_pos[k] + 1]);
    medium_sizes_[medium_pos[k]] = static_cast<uint8_t>(name.size());
  }
}

template <typename Id, typename D>
void DeviceNameIndex::DevicesOfSharedIds(const Id* ids, size_t count, D none, D* dev) const {
  const ShortTable t = short_;  // a local: in registers, whatever the stores below write
  for (const Id* const end = ids + count; ids != end; ++ids, ++dev) {
    const std::string_view id = *ids;
    const int pos = FindShort(t, id);
    if (pos >= 0) [[likely]] {
      *dev = static_cast<D>(pos);
    } else {  // -1: none
      *dev = static_cast<D>(std::min(static_cast<uint32_t>(DeviceOfSharedIdSlow(id)), uint32_t{none}));
    }
  }
}

template void DeviceNameIndex::DevicesOfSharedIds(const std::string*, size_t, uint16_t,
                                                  uint16_t*) const;
template void DeviceNameIndex::DevicesOfSharedIds(const std::string_view*, size_t, uint16_t,
                                                  uint16_t*) const;
template void DeviceNameIndex::DevicesOfSharedIds(const std::string*, size_t, uint32_t,
                                                  uint32_t*) const;
template void DeviceNameIndex::DevicesOfSharedIds(const std::string_view*, size_t, uint32_t,
                                                  uint32_t*) const;

int DeviceNameIndex::DeviceOfSharedIdSlow(std::string_view id) const {
  const size_t size = id.size();
  if (size >= 8) {
    const char* p = id.data();
    const unsigned dashes = DashesOf8(p + size - 8);
    if (dashes != 0) {
      const size_t n = size - 8 + static_cast<size_t>(31 - __builtin_clz(dashes));
      if (n > 8 && n <= 16) {  // the medium names' table, as the short one
        const uint64_t w0 = Load8(p), w1 = Load8(p + n - 8);
        const uint32_t pos = medium_at_[(MediumKey(w0, w1) * medium_mul_) >> medium_shift_];
        if (medium_words_[2 * pos] == w0 && medium_words_[2 * pos + 1] == w1 &&
            medium_sizes_[pos] == n) {
          return static_cast<int>(pos);
        }
      }
      if (n <= 16) {
        const uint64_t w0 = Load8(p) & (n >= 8 ? ~0ull : kLowBytes[n]);
        const uint64_t w1 = n > 8 ? Load8(p + n - 8) : 0;
        return Lookup(w0, w1, n);
      }
    }
  }
  const size_t dash = id.rfind('-');
  return dash == std::string_view::npos ? -1 : Find(id.substr(0, dash));
}

void DeviceNameIndex::KeyOf(std::string_view name, uint64_t* w0, uint64_t* w1) {
  const size_t n = name.size();
  char first[8] = {};
  std::memcpy(first, name.data(), n < 8 ? n : 8);
  *w0 = Load8(first);
  if (n <= 8) {
    *w1 = 0;
  } else if (n <= 16) {
    *w1 = Load8(name.data() + n - 8);
  } else {
    *w1 = Load8(name.data() + 8);
  }
}

int DeviceNameIndex::Probe(uint64_t w0, uint64_t w1, size_t n, size_t at) const {
  for (; slots_[at].index >= 0; at = (at + 1) & mask_) {
    const Slot& s = slots_[at];
    if (s.w0 == w0 && s.w1 == w1 && s.size == n) return s.index;
  }
  return -1;
}

int DeviceNameIndex::Find(std::string_view name) const {
  uint64_t w0, w1;
  KeyOf(name, &w0, &w1);
  const size_t n = name.size();
  if (n <= 16) return Lookup(w0, w1, n);
  for (size_t at = Mix(w0, w1 ^ n) & mask_; slots_[at].index >= 0; at = (at + 1) & mask_) {
    const Slot& s = slots_[at];
    if (s.w0 == w0 && s.w1 == w1 && s.size == n && names_[static_cast<size_t>(s.index)] == name) {
      return s.index;
    }
  }
  return -1;
}

}  // namespace rdmak8s::dp
