#include "device-plugin/device_name_index.h"

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
  BuildShortTable();
}

void DeviceNameIndex::BuildShortTable() {
  const size_t held = std::min(names_.size(), size_t{0xffff});  // positions a uint16_t holds
  short_keys_.assign(held + 1, 0);
  // The names of 1 to 8 bytes, each name once (its first position); one that ends in NUL (its
  // key is a shorter name's) is left to the general table.
  std::vector<uint32_t> pos;
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < names_.size(); ++i) {
    const size_t n = names_[i].size();
    if (n < 1 || n > 8 || Find(names_[i]) != static_cast<int>(i)) continue;
    if (i >= held || names_[i].back() == '\0') {
      ++short_left_out_;
      continue;
    }
    uint64_t key, unused;
    KeyOf(names_[i], &key, &unused);
    pos.push_back(static_cast<uint32_t>(i));
    keys.push_back(key);
  }
  // A quarter full, as the general table.
  unsigned bits = 4;
  while ((size_t{1} << bits) < pos.size() * 4) ++bits;
  const unsigned shift = 64 - bits;
  // The multiplier that leaves the fewest names without a home slot of their own, of the first
  // kShortMulTries of a fixed sequence (a table built twice is the same table). Device names
  // are alike but for a few bytes (mlx5_0 ... mlx5_1023), which a multiply spreads evenly: for
  // 1,000 such names in 4,096 slots, Fibonacci hashing's multiplier leaves 18 out, and one of the
  // first 64 usually none. A try stops as soon as it is no better than the best so far.
  std::vector<uint32_t> taken(size_t{1} << bits, 0);  // == try + 1: taken in that try
  size_t best = SIZE_MAX;
  uint64_t best_mul = kShortMul, mul = kShortMul, state = kShortMul;
  for (int t = 0; t < kShortMulTries && best > 0; ++t) {
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
  short_at_.assign(size_t{1} << bits, static_cast<uint16_t>(held));
  for (size_t k = 0; k < pos.size(); ++k) {
    uint16_t& at = short_at_[(keys[k] * best_mul) >> shift];
    if (at != held) {  // its home slot is another name's: the general table finds it
      ++short_left_out_;
      continue;
    }
    at = static_cast<uint16_t>(pos[k]);
    short_keys_[pos[k]] = keys[k];
  }
  short_ = ShortTable{short_at_.data(), short_keys_.data(), best_mul, shift};
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
