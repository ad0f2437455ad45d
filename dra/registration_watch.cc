#include "dra/registration_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rdmak8s::dra {

namespace {
constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                           IN_MOVE_SELF | IN_ONLYDIR;
}  // namespace

RegistrationWatch::~RegistrationWatch() {
  if (fd_ >= 0) ::close(fd_);
}

Status RegistrationWatch::Start(const std::string& dir, const std::string& socket_name) {
  dir_ = dir;
  name_ = socket_name;
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) return ErrnoError(errno, "inotify_init1");
  wd_ = ::inotify_add_watch(fd_, dir_.c_str(), kMask);
  if (wd_ < 0) return ErrnoError(errno, "inotify watch " + dir_);
  return Status::Ok();
}

void RegistrationWatch::Rewatch() {
  // The directory went away and may be back (kubelet re-creates it on start): watch the new one.
  // Failing here is not fatal: the next check of the socket serves it again and re-creates
  // nothing we can watch until the directory exists.
  wd_ = ::inotify_add_watch(fd_, dir_.c_str(), kMask);
}

bool RegistrationWatch::Drain() {
  bool touched = false;
  alignas(inotify_event) char buf[4096];
  while (true) {
    ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: drained
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      if (ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
        touched = true;
      } else if (ev->len > 0 && name_ == ev->name) {
        touched = true;
      }
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) wd_ = -1;
      p += sizeof(inotify_event) + ev->len;
    }
  }
  if (wd_ < 0) Rewatch();
  return touched;
}

}  // namespace rdmak8s::dra
