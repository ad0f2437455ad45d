// What every fuzz target shares: the libFuzzer entry point's signature and FUZZ_CHECK, an
// invariant that holds for every input. A broken one prints what broke and aborts, which
// libFuzzer records as a crash (with the input saved) and the corpus replay reports as a failed
// test: both builds treat a false invariant exactly like a sanitizer report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace rdmak8s::fuzz {

[[noreturn]] inline void InvariantBroken(const char* file, int line, const char* cond,
                                         const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n  %s\n", file, line, cond,
               detail.c_str());
  std::abort();
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace rdmak8s::fuzz

// FUZZ_CHECK(cond, detail): `detail` (a std::string expression) is only built when cond fails.
#define FUZZ_CHECK(cond, detail)                                                      \
  do {                                                                                \
    if (!(cond)) ::rdmak8s::fuzz::InvariantBroken(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
