// SocketDirWatch: tells an agent when sockets it cares about in a kubelet directory may have
// come or gone, so it serves or registers again on the event instead of on a timer. The device
// plugin watches kubelet's device-plugins directory (kubelet.sock re-created by a starting
// kubelet, our pool sockets removed); the DRA driver watches plugins_registry (its registration
// socket removed or renamed over).
//
// inotify(7) on the directory: IN_CREATE, IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO of the names the
// filter accepts are reported one by one. Anything after which no single name can be trusted
// asks the caller to look at every name again (Changes::recheck_all):
//   - IN_Q_OVERFLOW: events were lost;
//   - IN_DELETE_SELF / IN_MOVE_SELF: the directory itself went (rm -rf of kubelet's root, a
//     hostPath re-created); the watch is dropped;
//   - the directory back at its path: a second watch on the parent directory sees it created or
//     renamed in (IN_CREATE / IN_MOVED_TO of its name), and the watch is added again.
// So the directory's return is an event, not a timer. Only when the parent directory is gone
// too (or cannot be watched) does watching() turn false: then no event can tell the directory's
// return and the caller looks again on a timer (each Drain() tries to watch again).
//
// Thread safety: one thread (the agent's event loop).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

class SocketDirWatch {
 public:
  // Which file names in the directory the caller cares about.
  using NameFilter = std::function<bool(const std::string& name)>;

  // One name that came or went.
  struct Event {
    uint32_t mask = 0;  // IN_CREATE or IN_MOVED_TO (came), IN_DELETE or IN_MOVED_FROM (went)
    std::string name;
  };
  // What one Drain() found.
  struct Changes {
    std::vector<Event> events;  // in the kernel's order
    // Events may have been missed, or the directory went or came back: check every name.
    bool recheck_all = false;
    bool any() const { return recheck_all || !events.empty(); }
  };

  SocketDirWatch() = default;
  ~SocketDirWatch();
  SocketDirWatch(const SocketDirWatch&) = delete;
  SocketDirWatch& operator=(const SocketDirWatch&) = delete;

  // Watches `dir` (which must exist) for the names `filter` accepts, and `dir`'s parent for the
  // directory's return. An error names the directory and the cause. Call once.
  Status Start(const std::string& dir, NameFilter filter);
  // Only `name`: the filter of an agent with one socket.
  Status Start(const std::string& dir, const std::string& name);

  // Readable (poll/epoll) when events are waiting.
  int fd() const { return fd_; }
  // Reads every waiting event. Never blocks. Re-adds the directory's watch when the directory is
  // back (then recheck_all is set).
  Changes Drain();
  // False while neither the directory nor its parent is watched: the caller then looks again on
  // a timer (each Drain tries to watch again).
  bool watching() const { return wd_ >= 0 || parent_wd_ >= 0; }
  // True while the directory itself is watched.
  bool watching_dir() const { return wd_ >= 0; }
  const std::string& dir() const { return dir_; }

 private:
  // Adds the watches that are missing; true when the directory's watch was added.
  bool Rewatch();

  std::string dir_;
  std::string parent_;
  std::string base_;  // the directory's name in parent_
  NameFilter filter_;
  int fd_ = -1;
  int wd_ = -1;         // the directory
  int parent_wd_ = -1;  // its parent: the directory's return
};

}  // namespace rdmak8s::node
