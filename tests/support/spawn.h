// SpawnDaemon / WaitForExit: one of our daemons (the device plugin, the DRA driver) run as its
// own process by a test, the way a kubelet's node runs it: exec'ed with exactly the arguments
// given, stderr to a file the test reads, and never outliving the test.
//
// The test process has threads (gRPC, the fake kubelet), so the child does only what is safe
// between fork and exec: the environment and arguments are built before the fork.
#pragma once

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace rdmak8s::testing {

struct SpawnOptions {
  std::string stderr_path{};             // empty: the test's own stderr
  bool append_stderr = false;            // keep what earlier runs wrote (restarts), else truncate
  std::vector<std::string> unset_env{};  // names left out of the child's environment
  int umask = -1;                        // the child's umask; -1: the test's own
};

// fork + execv(argv[0], argv). The child gets SIGKILL when the test dies (an ASan report, a
// crash): an orphan would keep ctest's output pipe open and hang the run. Returns the child's
// pid, or -1 when fork failed. A child that cannot open its stderr file exits 126, one that
// cannot exec 127.
inline pid_t SpawnDaemon(const std::vector<std::string>& args, const SpawnOptions& o = {}) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    const std::string name(*e, eq != nullptr ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    if (std::find(o.unset_env.begin(), o.unset_env.end(), name) == o.unset_env.end()) envp.push_back(*e);
  }
  envp.push_back(nullptr);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (o.append_stderr ? O_APPEND : O_TRUNC);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (o.umask >= 0) ::umask(static_cast<mode_t>(o.umask));
  if (!o.stderr_path.empty()) {
    int fd = open(o.stderr_path.c_str(), flags, 0644);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
  }
  execve(argv[0], argv.data(), envp.data());
  _exit(127);
}

// The wait status of `pid` once it has exited, or -1 when it has not within `timeout`.
inline int WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace rdmak8s::testing
