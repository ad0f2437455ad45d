// What the CNI benches share: a percentile of their samples, a timeval in microseconds, a shell
// command run quietly (the netns and link set-up the figures leave out).
#pragma once

#include <sys/time.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace rdmak8s::bench {

// The p-th (0..1) of `v`, the nearest rank.
inline double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

inline double Us(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) * 1e6 + static_cast<double>(tv.tv_usec);
}

// `cmd` through sh, its output dropped: true when it exits 0.
inline bool Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

}  // namespace rdmak8s::bench
