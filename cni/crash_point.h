// CrashPoint: a place right after one of the CNI's writes (a record, knobs.json, a knob, a device
// move) where a test build can stop the process dead, as SIGKILL or a power cut would, to prove
// that what a runtime runs next (DEL, ADD again, GC) leaves the node as it was.
//
// In the shipped plugin this is an empty inline function: the hook does not exist in the binary.
// Only a build that defines RDMAK8S_CRASH_POINTS (tests/reliability's plugin variant, never a
// product target) compiles it in. There, each call:
//   - appends "<name>\n" to the file $RDMAK8S_CRASH_LIST names (when set), so a test lists
//     every point an invocation passes, in order (a new write with a hook is tested at once);
//   - raises SIGKILL when $RDMAK8S_CRASH_AT is "<name>" (its first pass) or "<name>@<n>" (its
//     n-th pass, 1-based, in this process).
// Names: "<command or room>.<what was just written>", e.g. "add.record_saved".
#pragma once

#ifdef RDMAK8S_CRASH_POINTS
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#endif

namespace rdmak8s::cni {

#ifdef RDMAK8S_CRASH_POINTS
inline void CrashPoint(const char* name) {
  static std::map<std::string, int> passes;
  const int n = ++passes[name];
  if (const char* list = std::getenv("RDMAK8S_CRASH_LIST"); list != nullptr && *list != '\0') {
    int fd = open(list, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      const std::string line = std::string(name) + "\n";
      (void)!write(fd, line.data(), line.size());
      close(fd);
    }
  }
  if (const char* at = std::getenv("RDMAK8S_CRASH_AT"); at != nullptr) {
    const std::string want = at;
    if (want == name || want == std::string(name) + "@" + std::to_string(n)) raise(SIGKILL);
  }
}
#else
inline void CrashPoint(const char*) {}
#endif

}  // namespace rdmak8s::cni
