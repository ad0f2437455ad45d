// Preferred allocation, the scan kernel: per available ID its device number (DevOf), and the
// vectorised pass over those numbers that finds the IDs of a few wanted devices
// (ForEachOnDevices). Internal to preferred allocation (device-plugin/preferred_allocation/preferred_allocation.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rdmak8s::dp::preferred_allocation {

// Per available ID, its device: 0..n-1 the topology's, n none known, kMust a must-include ID.
// Kept as 16-bit numbers when they fit (half the memory the last pass reads, 8 compared per
// SSE2 instruction there), else 32-bit.
class DevOf {
 public:
  template <typename D>
  static constexpr D kMust = std::numeric_limits<D>::max();

  DevOf(size_t ids, size_t devices) {
    if (devices < kMust<uint16_t>) {
      narrow_ = std::make_unique_for_overwrite<uint16_t[]>(ids);  // every element is written
    } else {
      wide_ = std::make_unique_for_overwrite<uint32_t[]>(ids);
    }
  }
  // f(D* dev_of), D the type in use.
  template <typename F>
  void Visit(F&& f) {
    if (narrow_) {
      f(narrow_.get());
    } else {
      f(wide_.get());
    }
  }

 private:
  std::unique_ptr<uint16_t[]> narrow_;
  std::unique_ptr<uint32_t[]> wide_;
};

// f(i) for each i < total with dev[i] among `wanted` (devices under `devices`), in order.
// The last pass over the IDs: most requests want a few devices of many, so the device numbers
// are compared a vector at a time (GCC vector extensions: SSE2 on x86-64, plain code elsewhere)
// and only vectors holding one are looked at closer. The picked devices are usually neighbours
// (siblings under one bridge, in natural order): when they lie within 64 numbers, a vector is
// tested against that range (two operations) and a hit against a bit mask; else up to 8 are
// compared one by one, more than 8 take a table per device.
template <typename D, typename F>
void ForEachOnDevices(const D* dev, size_t total, size_t devices, const std::vector<uint32_t>& wanted,
                      F&& f) {
  if (wanted.empty()) return;
  constexpr size_t kLanes = 16 / sizeof(D);
  typedef D V __attribute__((vector_size(16)));
  auto any = [](const auto& m) {
#if defined(__SSE2__)
    __m128i x;
    std::memcpy(&x, &m, sizeof(x));
    return _mm_movemask_epi8(x) != 0;
#else
    uint64_t half[2];
    std::memcpy(half, &m, sizeof(half));
    return (half[0] | half[1]) != 0;
#endif
  };
  size_t i = 0;
  const auto [lo_it, hi_it] = std::minmax_element(wanted.begin(), wanted.end());
  const uint32_t lo = *lo_it, span = *hi_it - lo + 1;
  if (span <= 64) {
    uint64_t bits = 0;
    for (uint32_t d : wanted) bits |= uint64_t{1} << (d - lo);
    auto is_wanted = [&](D d) {
      const uint32_t off = static_cast<uint32_t>(d) - lo;  // wraps below lo
      return off < span && ((bits >> off) & 1) != 0;
    };
    V lo_v, last_v;
    for (size_t j = 0; j < kLanes; ++j) {
      lo_v[j] = static_cast<D>(lo);
      last_v[j] = static_cast<D>(span - 1);
    }
    // Four vectors (32 16-bit numbers) a step, one branch for them; a step with numbers in the
    // range walks them by bit (SSE2: one bit per byte, the lowest of each number's kept).
    for (; i + 4 * kLanes <= total; i += 4 * kLanes) {
      V v0, v1, v2, v3;
      std::memcpy(&v0, dev + i, sizeof(V));
      std::memcpy(&v1, dev + i + kLanes, sizeof(V));
      std::memcpy(&v2, dev + i + 2 * kLanes, sizeof(V));
      std::memcpy(&v3, dev + i + 3 * kLanes, sizeof(V));
      const auto m0 = (v0 - lo_v) <= last_v;
      const auto m1 = (v1 - lo_v) <= last_v;
      const auto m2 = (v2 - lo_v) <= last_v;
      const auto m3 = (v3 - lo_v) <= last_v;
      if (!any(m0 | m1 | m2 | m3)) [[likely]] continue;
#if defined(__SSE2__)
      auto byte_bits = [](const auto& m) {
        __m128i x;
        std::memcpy(&x, &m, sizeof(x));
        return static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(x)));
      };
      constexpr uint64_t kLaneBits = sizeof(D) == 2 ? 0x5555555555555555ull : 0x1111111111111111ull;
      uint64_t b = (byte_bits(m0) | byte_bits(m1) << 16 | byte_bits(m2) << 32 | byte_bits(m3) << 48) &
                   kLaneBits;
      for (; b != 0; b &= b - 1) {
        const size_t j = i + static_cast<size_t>(__builtin_ctzll(b)) / sizeof(D);
        if (is_wanted(dev[j])) f(j);
      }
#else
      for (size_t j = i; j < i + 4 * kLanes; ++j) {
        if (is_wanted(dev[j])) f(j);
      }
#endif
    }
    for (; i < total; ++i) {
      if (is_wanted(dev[i])) f(i);
    }
    return;
  }
  if (wanted.size() <= 8) {
    V w[8];
    for (size_t k = 0; k < 8; ++k) {  // padded with the last: no device is added
      const D d = static_cast<D>(wanted[std::min(k, wanted.size() - 1)]);
      for (size_t j = 0; j < kLanes; ++j) w[k][j] = d;
    }
    auto is_wanted = [&](D d) { return std::find(wanted.begin(), wanted.end(), d) != wanted.end(); };
    for (; i + kLanes <= total; i += kLanes) {
      V v;
      std::memcpy(&v, dev + i, sizeof(v));
      const auto m = (v == w[0]) | (v == w[1]) | (v == w[2]) | (v == w[3]) | (v == w[4]) |
                     (v == w[5]) | (v == w[6]) | (v == w[7]);
      if (!any(m)) [[likely]] continue;
      for (size_t j = 0; j < kLanes; ++j) {
        if (m[j] != 0) f(i + j);
      }
    }
    for (; i < total; ++i) {
      if (is_wanted(dev[i])) f(i);
    }
    return;
  }
  std::vector<char> is_wanted(devices, 0);
  for (uint32_t d : wanted) is_wanted[d] = 1;
  for (; i < total; ++i) {
    if (dev[i] < devices && is_wanted[dev[i]]) f(i);
  }
}

// count[d] += how many of dev[0, total) are d, for d < count->size(). A pass of its own over the

}  // namespace rdmak8s::dp::preferred_allocation
