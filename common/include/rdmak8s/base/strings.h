// Joining message parts: lists in log lines, error messages and the inspect tool's columns,
// for every binary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rdmak8s {

// "a, b, c" (with `sep` between); "" for none.
inline std::string Join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// `s` in double quotes, fit for a message about untrusted input (a name from kubelet, a key of
// a claim): printable ASCII as is, '"' and '\\' escaped, every other byte as \xNN, and at most
// `max` bytes of `s` shown ("..." after them), so no input forges a log line or floods it.
inline std::string Quoted(std::string_view s, size_t max = 256) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  out += '"';
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace rdmak8s
