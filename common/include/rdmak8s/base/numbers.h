// The one number parser of the project: text from sysfs, a config file, a netconf, a flag, a
// peer's header or a record on disk into an integer of the caller's type, strictly.
//
// Strict means: the whole text is the number (no leading or trailing spaces, no "12abc": a sysfs
// attribute's newline is cut by its reader, sysfs_attr.h, not here), no sign for an unsigned
// type (and no '+' for a signed one), and the value fits the caller's type (range-checked, never
// truncated). Leading zeros are accepted ("007" is 7, as the kernel's kstrtoul reads it). Base 10
// unless the caller asks for hex (GIDs, PKeys, PCI IDs).
//
// Errors are kInvalidArgument and name what was parsed and why, with the text quoted:
//   pfc priority: "12abc" is not a number
//   pfc priority: "-1" has a sign, an unsigned number is wanted
//   pfc priority: "300" is out of range 0..255
//   pfc priority: empty, not a number
// `what` is the caller's name for the thing (a JSON path, a sysfs path, a flag): it comes first.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <string_view>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

enum class NumberBase {
  kDecimal,   // "26"
  kHex,       // "1a", "ffff" (no prefix: GID groups, PCI address parts)
  kPrefixed,  // "0x1a" or "0X1A" as hex, anything else decimal: sysfs IDs ("0x15b3", "0xffff")
};

namespace internal {
StatusOr<uint64_t> ParseUnsignedIn(std::string_view text, std::string_view what, NumberBase base,
                                   uint64_t max);
StatusOr<int64_t> ParseSignedIn(std::string_view text, std::string_view what, int64_t min,
                                int64_t max);
}  // namespace internal

// `text` as an unsigned number of type T.
template <std::unsigned_integral T>
StatusOr<T> ParseUnsigned(std::string_view text, std::string_view what,
                          NumberBase base = NumberBase::kDecimal) {
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, internal::ParseUnsignedIn(text, what, base,
                                                                 std::numeric_limits<T>::max()));
  return static_cast<T>(v);
}

// `text` as a signed decimal number of type T ("-1" is a sysfs numa_node's "none").
template <std::signed_integral T>
StatusOr<T> ParseSigned(std::string_view text, std::string_view what) {
  RDMAK8S_ASSIGN_OR_RETURN(int64_t v, internal::ParseSignedIn(text, what,
                                                              std::numeric_limits<T>::min(),
                                                              std::numeric_limits<T>::max()));
  return static_cast<T>(v);
}

// `text` as an unsigned number in [min, max] (a DSCP 0..63, an MTU 68..65535): out of it is
// `what: "<text>" is out of range <min>..<max>`.
StatusOr<uint64_t> ParseUnsignedInRange(std::string_view text, std::string_view what,
                                        uint64_t min, uint64_t max,
                                        NumberBase base = NumberBase::kDecimal);

// The sysfs attribute forms, kept under these names for their many callers: an unsigned 64-bit
// value in NumberBase::kPrefixed ("0x1a", "26"), a signed 64-bit decimal ("-1").
StatusOr<uint64_t> ParseUint(std::string_view text, std::string_view what);
StatusOr<int64_t> ParseInt(std::string_view text, std::string_view what);

}  // namespace rdmak8s
