// RegistrationWatch: tells the driver when its registration socket in kubelet's
// plugins_registry directory may have gone (removed, renamed over, or the directory emptied by a
// kubelet that wiped it), so DraPlugin::ServeRegistrationAgain runs on the event instead of on
// a timer. inotify(7) on the directory: IN_CREATE, IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO of
// the socket's name; an overflow of the queue (IN_Q_OVERFLOW) counts as "may have gone" too,
// and so do IN_DELETE_SELF / IN_MOVE_SELF of the directory (the watch is then re-added when the
// directory is back).
//
// Thread safety: one thread (the driver's main loop).
#pragma once

#include <string>

#include "rdmak8s/status.h"

namespace rdmak8s::dra {

class RegistrationWatch {
 public:
  RegistrationWatch() = default;
  ~RegistrationWatch();
  RegistrationWatch(const RegistrationWatch&) = delete;
  RegistrationWatch& operator=(const RegistrationWatch&) = delete;

  // Watches `dir` for `socket_name`. An error names the directory (it must exist).
  Status Start(const std::string& dir, const std::string& socket_name);
  // Readable (poll) when events are waiting.
  int fd() const { return fd_; }
  // Reads every waiting event; true when one may have touched the socket (check it again).
  // Never blocks.
  bool Drain();
  // False after the directory went away until a Drain found it back: the caller then checks on
  // a timer (and Drain re-adds the watch).
  bool watching() const { return wd_ >= 0; }

 private:
  void Rewatch();

  std::string dir_;
  std::string name_;
  int fd_ = -1;
  int wd_ = -1;
};

}  // namespace rdmak8s::dra
