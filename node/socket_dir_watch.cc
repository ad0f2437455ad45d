// SocketDirWatch: inotify on a kubelet socket directory and on its parent.
#include "node/socket_dir_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

namespace rdmak8s::node {

namespace {

constexpr uint32_t kDirMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                              IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
// The parent: our directory created or renamed in (its removal shows on its own watch).
constexpr uint32_t kParentMask = IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                                 IN_ONLYDIR;

// "/a/b/" -> ("/a", "b"); "/b" -> ("/", "b"); "b" -> (".", "b").
std::pair<std::string, std::string> SplitDir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.rfind('/');
  if (slash == std::string::npos) return {".", dir};
  return {slash == 0 ? "/" : dir.substr(0, slash), dir.substr(slash + 1)};
}

}  // namespace

SocketDirWatch::~SocketDirWatch() {
  if (fd_ >= 0) ::close(fd_);
}

Status SocketDirWatch::Start(const std::string& dir, const std::string& name) {
  return Start(dir, [name](const std::string& n) { return n == name; });
}

Status SocketDirWatch::Start(const std::string& dir, NameFilter filter) {
  dir_ = dir;
  filter_ = std::move(filter);
  std::tie(parent_, base_) = SplitDir(dir_);
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) return ErrnoError(errno, "inotify_init1 (watch of " + dir_ + ")");
  wd_ = ::inotify_add_watch(fd_, dir_.c_str(), kDirMask);
  if (wd_ < 0) return ErrnoError(errno, "inotify watch " + dir_);
  // Without the parent's watch (the root directory, an unreadable parent) the directory's return
  // is found by the caller's timer instead: not an error.
  if (!base_.empty()) parent_wd_ = ::inotify_add_watch(fd_, parent_.c_str(), kParentMask);
  return Status::Ok();
}

bool SocketDirWatch::Rewatch() {
  if (parent_wd_ < 0 && !base_.empty()) {
    parent_wd_ = ::inotify_add_watch(fd_, parent_.c_str(), kParentMask);
  }
  if (wd_ >= 0) return false;
  // Fails while the directory is still missing: its creation then shows on the parent's watch.
  wd_ = ::inotify_add_watch(fd_, dir_.c_str(), kDirMask);
  return wd_ >= 0;
}

SocketDirWatch::Changes SocketDirWatch::Drain() {
  Changes out;
  bool dir_back = false;
  alignas(inotify_event) std::array<char, 8192> buf{};
  while (true) {
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n <= 0) break;  // EAGAIN: drained
    for (size_t off = 0; off < static_cast<size_t>(n);) {
      inotify_event ev{};
      std::memcpy(&ev, buf.data() + off, sizeof(ev));
      // The name is NUL-padded to ev.len.
      const std::string name = ev.len > 0 ? std::string(buf.data() + off + sizeof(ev)) : "";
      off += sizeof(inotify_event) + ev.len;
      if (ev.mask & IN_Q_OVERFLOW) {
        out.recheck_all = true;
        continue;
      }
      if (wd_ >= 0 && ev.wd == wd_) {
        if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
          // A directory renamed away keeps its watch (IN_MOVE_SELF ends nothing): drop it, or its
          // events would pass for ours.
          if (!(ev.mask & IN_IGNORED)) ::inotify_rm_watch(fd_, wd_);
          wd_ = -1;
          out.recheck_all = true;
        } else if (!name.empty() && filter_ && filter_(name)) {
          out.events.push_back({ev.mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO),
                                name});
        }
      } else if (parent_wd_ >= 0 && ev.wd == parent_wd_) {
        if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
          if (!(ev.mask & IN_IGNORED)) ::inotify_rm_watch(fd_, parent_wd_);
          parent_wd_ = -1;
        } else if (name == base_) {
          dir_back = true;
        }
      }
      // Anything else: a watch already dropped (its IN_IGNORED, its last events).
    }
  }
  if (Rewatch() || dir_back) out.recheck_all = true;
  return out;
}

}  // namespace rdmak8s::node
