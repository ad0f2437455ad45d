// ExecCapture: a program exec'ed the way a CNI runtime execs a plugin (fork + execve with exactly
// the given argv and environment, `input` on stdin, stdout captured, stderr to /dev/null), from
// the calling thread (so in its netns), and how it ended with its resource usage (wait4). The
// reliability tests exec the world plugin with it, the CNI exec bench the bench plugin.
//
// Only async-signal-safe calls between fork and exec: argv and the environment are built before.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <vector>

namespace rdmak8s::testing {

// How an exec'ed program ended.
struct ExecResult {
  int exit_code = -1;   // -1 when killed (or never started: no pipe)
  int signal = 0;       // the signal that killed it
  std::string out;      // its stdout
  rusage usage{};       // its user and system time, peak RSS
};

inline ExecResult ExecCapture(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                              const std::string& input) {
  ExecResult r;
  std::vector<char*> a, e;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return r;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return r;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);  // (the log file has what stderr gets)
    dup2(null, 2);
    execve(a[0], a.data(), e.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  signal(SIGPIPE, SIG_IGN);  // a plugin that exits before reading all of its stdin
  (void)!write(in[1], input.data(), input.size());
  close(in[1]);
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  if (pid < 0 || wait4(pid, &status, 0, &r.usage) < 0) return r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace rdmak8s::testing
