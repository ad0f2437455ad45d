// StopSignals: SIGTERM/SIGINT/SIGHUP blocked for the process and read from a signalfd.
#include "node/stop_signals.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace rdmak8s::node {

namespace {

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

std::string ReceivedSignal::name() const {
  if (signo == 0) return "none";
  const char* s = strsignal(signo);
  return s != nullptr ? s : "signal " + std::to_string(signo);
}

Status BlockStopSignals() {
  const sigset_t set = StopSet();
  // pthread_sigmask returns the error number; it does not set errno.
  if (int err = pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    return ErrnoError(err, "block SIGTERM, SIGINT and SIGHUP (pthread_sigmask)");
  }
  if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) return ErrnoError(errno, "ignore SIGPIPE (signal)");
  return Status::Ok();
}

StatusOr<StopSignals> StopSignals::Open() {
  const sigset_t set = StopSet();
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "signalfd of SIGTERM, SIGINT and SIGHUP");
  return StopSignals(fd);
}

StopSignals::StopSignals(StopSignals&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

StopSignals& StopSignals::operator=(StopSignals&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

StopSignals::~StopSignals() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<ReceivedSignal> StopSignals::Read() {
  signalfd_siginfo si{};
  ssize_t n = 0;
  do {
    n = ::read(fd_, &si, sizeof(si));
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ReceivedSignal{};
    return ErrnoError(errno, "read signalfd");
  }
  // signalfd(2) returns whole signalfd_siginfo records or fails with EINVAL.
  if (n != static_cast<ssize_t>(sizeof(si))) {
    return InternalError("read signalfd: " + std::to_string(n) + " bytes, not one signalfd_siginfo");
  }
  ReceivedSignal out;
  out.signo = static_cast<int>(si.ssi_signo);
  out.request = out.signo == SIGHUP ? SignalRequest::kLookAgain : SignalRequest::kStop;
  return out;
}

}  // namespace rdmak8s::node
