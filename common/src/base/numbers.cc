// The one number parser (rdmak8s/base/numbers.h): std::from_chars over the whole text, with the
// checks from_chars leaves to its caller (the end of the text, a sign, the caller's range).
#include "rdmak8s/base/numbers.h"

#include <charconv>
#include <string>
#include <system_error>

namespace rdmak8s {
namespace {

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

Status NotANumber(std::string_view text, std::string_view what, std::string_view why = "") {
  if (text.empty()) return InvalidArgumentError(std::string(what) + ": empty, not a number");
  std::string msg = std::string(what) + ": " + Quoted(text) + " is not a number";
  if (!why.empty()) msg += std::string(" (") + std::string(why) + ")";
  return InvalidArgumentError(msg);
}

template <typename T>
Status OutOfRange(std::string_view text, std::string_view what, T min, T max) {
  return InvalidArgumentError(std::string(what) + ": " + Quoted(text) + " is out of range " +
                              std::to_string(min) + ".." + std::to_string(max));
}

}  // namespace

namespace internal {

StatusOr<uint64_t> ParseUnsignedIn(std::string_view text, std::string_view what, NumberBase base,
                                   uint64_t max) {
  std::string_view digits = text;
  int radix = base == NumberBase::kHex ? 16 : 10;
  if (base == NumberBase::kPrefixed && digits.size() >= 2 && digits[0] == '0' &&
      (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    radix = 16;
    if (digits.empty()) return NotANumber(text, what, "no digits after 0x");
  }
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
    return InvalidArgumentError(std::string(what) + ": " + Quoted(text) +
                                " has a sign, an unsigned number is wanted");
  }
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, radix);
  if (digits.empty() || ptr != digits.data() + digits.size() ||
      (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return NotANumber(text, what);
  }
  if (ec == std::errc::result_out_of_range || v > max) {
    return OutOfRange<uint64_t>(text, what, 0, max);
  }
  return v;
}

StatusOr<int64_t> ParseSignedIn(std::string_view text, std::string_view what, int64_t min,
                                int64_t max) {
  if (!text.empty() && text.front() == '+') return NotANumber(text, what, "a '+' sign");
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 10);
  if (text.empty() || ptr != text.data() + text.size() ||
      (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return NotANumber(text, what);
  }
  if (ec == std::errc::result_out_of_range || v < min || v > max) {
    return OutOfRange<int64_t>(text, what, min, max);
  }
  return v;
}

}  // namespace internal

StatusOr<uint64_t> ParseUnsignedInRange(std::string_view text, std::string_view what,
                                        uint64_t min, uint64_t max, NumberBase base) {
  RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, internal::ParseUnsignedIn(text, what, base, UINT64_MAX));
  if (v < min || v > max) return OutOfRange<uint64_t>(text, what, min, max);
  return v;
}

StatusOr<uint64_t> ParseUint(std::string_view text, std::string_view what) {
  return ParseUnsigned<uint64_t>(text, what, NumberBase::kPrefixed);
}

StatusOr<int64_t> ParseInt(std::string_view text, std::string_view what) {
  return ParseSigned<int64_t>(text, what);
}

}  // namespace rdmak8s
