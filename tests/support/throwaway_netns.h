// Throwaway network namespaces for tests (needs root).
//
// NewThrowawayNetns() creates an empty netns held only by the returned Netns's fd: no name, no
// bind mount under /var/run/netns. It disappears when the Netns closes, even if the test fails
// or crashes, and parallel tests (ctest -j) cannot collide on names. Its path() is
// /proc/<pid>/fd/<fd>, which other processes (a CNI plugin under test) can open while it lives.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>

#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netns.h"

namespace rdmak8s::testing {

inline StatusOr<Netns> NewThrowawayNetns() {
  int fd = -1;
  int err = 0;
  // unshare(CLONE_NEWNET) moves only the calling thread: do it on a short-lived one.
  std::thread t([&] {
    if (unshare(CLONE_NEWNET) != 0) {
      err = errno;
      return;
    }
    fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) err = errno;
  });
  t.join();
  if (fd < 0) return ErrnoError(err, "create throwaway netns");
  return Netns(fd, "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(fd));
}

// Runs `cmd` with /bin/sh inside `ns` (a forked child inherits the calling thread's netns).
inline Status ShIn(const Netns& ns, const std::string& cmd) {
  return RunInNetns(ns, [&]() -> Status {
    int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
      return InternalError("'" + cmd + "' failed (status " + std::to_string(rc) + ")");
    }
    return Status::Ok();
  });
}

}  // namespace rdmak8s::testing
