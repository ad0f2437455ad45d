#include "device-plugin/device_name_index.h"

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
  // The short names' table, as full as the general one. Built after it: Find tells a name given
  // twice.
  unsigned bits = 4;
  while ((size_t{1} << bits) < names_.size() * 4) ++bits;
  short_.assign(size_t{1} << bits, ShortSlot{});
  short_mask_ = short_.size() - 1;
  short_shift_ = 64 - bits;
  for (size_t i = 0; i < names_.size(); ++i) {
    const size_t n = names_[i].size();
    if (n < 1 || n > 8 || Find(names_[i]) != static_cast<int>(i)) continue;
    uint64_t key, unused;
    KeyOf(names_[i], &key, &unused);
    size_t at = static_cast<size_t>((key * kShortMul) >> short_shift_);
    while (short_[at].index >= 0) at = (at + 1) & short_mask_;
    short_[at] = ShortSlot{key, static_cast<int32_t>(i), static_cast<uint32_t>(n - 1)};
  }
}

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
