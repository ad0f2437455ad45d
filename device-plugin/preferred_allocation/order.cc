// Preferred allocation, natural ordering of names and IDs ("mlx5_2-9" before "mlx5_2-10"): the
// order every remaining tie is broken in.
#include <bit>
#include <cstdint>
#include <cstring>

#include "device-plugin/preferred_allocation/preferred_allocation.h"

namespace rdmak8s::dp {
namespace {

// std::isdigit without the call: the decimal digits are '0'..'9' in every locale (C11 7.4.1.5).
bool IsDigit(char c) { return static_cast<unsigned>(static_cast<unsigned char>(c)) - '0' < 10u; }

}  // namespace

bool NaturalLess(std::string_view a, std::string_view b) {
  // The common prefix compares equal token by token: start after it, at the beginning of the
  // digit run (if any) it ends in. IDs of one device share their whole name.
  // A word at a time (the minimum of a device's IDs compares 100 of them that share 7 or more
  // bytes): on a little-endian machine the first byte that differs is the lowest set one.
  const size_t limit = std::min(a.size(), b.size());
  size_t m = 0;
  if constexpr (std::endian::native == std::endian::little) {
    for (; m + 8 <= limit; m += 8) {
      uint64_t x, y;
      std::memcpy(&x, a.data() + m, 8);
      std::memcpy(&y, b.data() + m, 8);
      if (x != y) {
        m += static_cast<size_t>(__builtin_ctzll(x ^ y)) / 8;
        break;
      }
    }
  }
  while (m < limit && a[m] == b[m]) ++m;
  while (m > 0 && IsDigit(a[m - 1])) --m;
  size_t i = m, j = m;
  while (i < a.size() && j < b.size()) {
    if (IsDigit(a[i]) && IsDigit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && IsDigit(a[ie])) ++ie;
      while (je < b.size() && IsDigit(b[je])) ++je;
      size_t is = i, js = j;  // skip leading zeros
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      for (; is < ie; ++is, ++js) {  // runs of one length: the first digit that differs
        if (a[is] != b[js]) return a[is] < b[js];
      }
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

}  // namespace rdmak8s::dp
