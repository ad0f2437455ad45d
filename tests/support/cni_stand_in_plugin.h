// The CNI binary's main (cni/main.cc) for the stand-in plugins a test or a bench execs (the
// reliability tests' world_plugin, the bench's cni_exec_plugin): stdin read whole, RunPlugin with
// the caller's seams, its result on stdout. Header only: each links its own CNI library
// (rdmak8s_cni, or rdmak8s_cni_crash_points with the crash hooks).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cni/plugin.h"

namespace rdmak8s::testing {

// What a runtime passes on stdin and in CNI_*, run through the plugin with `options`' seams: the
// result (or the error object) on stdout, the plugin's exit code returned.
inline int RunStandInPlugin(const cni::PluginOptions& options) {
  std::string input;
  char buf[65536];
  for (ssize_t n; (n = read(0, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    input.append(buf, static_cast<size_t>(n));
  }
  auto out = cni::RunPlugin(options, [](const char* k) { return std::getenv(k); }, input);
  if (!out.stdout_data.empty()) {
    out.stdout_data += "\n";
    fwrite(out.stdout_data.data(), 1, out.stdout_data.size(), stdout);
  }
  fflush(stdout);
  return out.exit_code;
}

}  // namespace rdmak8s::testing
