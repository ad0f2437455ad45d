// StopSignals: how both agents hear SIGTERM/SIGINT ("stop") and SIGHUP ("look again": the device
// plugin reloads its config and rescans, the DRA driver rescans) without a signal handler: the
// three signals blocked for the whole process before any thread starts, then read one at a time
// from a signalfd(2) on the agent's own event loop.
//
// Use: BlockStopSignals() first thing in main(), before gRPC, the HTTP server or any other
// thread exists (threads inherit the mask; a thread made earlier would still take the default
// action, and SIGTERM would kill the process without its clean-up). Then StopSignals::Open()
// and poll fd() with the loop's other fds.
//
// Thread safety: a StopSignals is used by one thread (the loop that owns it).
#pragma once

#include <string>

#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

// What a signal asks of the agent.
enum class SignalRequest {
  kNone,       // nothing waiting
  kStop,       // SIGTERM, SIGINT: shut down cleanly
  kLookAgain,  // SIGHUP: reload what can be reloaded, rescan the devices
};

// One signal read from the signalfd.
struct ReceivedSignal {
  SignalRequest request = SignalRequest::kNone;
  int signo = 0;  // 0 with kNone
  // "Terminated", "Interrupt", "Hangup" (strsignal(3)): for the log line.
  std::string name() const;
};

// Blocks SIGTERM, SIGINT and SIGHUP for the calling thread and every thread it makes later
// (pthread_sigmask), and ignores SIGPIPE (a peer that closed a socket is an error return, not a
// death). Idempotent. An error names the call that failed.
Status BlockStopSignals();

// Owns the signalfd of SIGTERM, SIGINT and SIGHUP (non-blocking, close-on-exec). Move-only.
class StopSignals {
 public:
  // Opens the signalfd. The signals must be blocked (BlockStopSignals) or the kernel delivers
  // them the default way and the fd never sees them. An error names signalfd and its cause.
  static StatusOr<StopSignals> Open();

  StopSignals(StopSignals&& other) noexcept;
  StopSignals& operator=(StopSignals&& other) noexcept;
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals();

  // Readable (poll/epoll) while a signal is waiting.
  int fd() const { return fd_; }
  // Takes one waiting signal; kNone when none is waiting. Never blocks. An error names the read
  // of the signalfd and its cause (EINTR is retried).
  StatusOr<ReceivedSignal> Read();

 private:
  explicit StopSignals(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace rdmak8s::node
