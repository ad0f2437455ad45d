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

}  // namespace rdmak8s
