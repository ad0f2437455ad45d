// Network namespaces: open one by path and run code inside it, always coming back.
//
// setns(2) changes the calling thread only, so RunInNetns switches this thread, runs `fn`, and
// switches back to the namespace it came from. Failing to return is a broken invariant the
// process cannot recover from (every later syscall would act in the wrong netns): it aborts.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

// An open network namespace (an fd on /proc/.../ns/net or a bind mount under /var/run/netns).
// Move-only; closes its fd.
class Netns {
 public:
  Netns() = default;
  explicit Netns(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Netns(Netns&& other) noexcept;
  Netns& operator=(Netns&& other) noexcept;
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;
  ~Netns();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool valid() const { return fd_ >= 0; }
  // Same namespace as `other` (same st_dev/st_ino).
  bool SameAs(const Netns& other) const;

 private:
  int fd_ = -1;
  std::string path_;
};

// kNotFound when the path does not exist; kInvalidArgument when it is not a network namespace.
StatusOr<Netns> OpenNetns(std::string_view path);
// The calling thread's current namespace (/proc/thread-self/ns/net).
StatusOr<Netns> CurrentNetns();

// Runs fn inside `ns` on this thread and returns its Status; the thread is always back in its
// original namespace afterwards (aborts if it cannot get back).
Status RunInNetns(const Netns& ns, const std::function<Status()>& fn);

}  // namespace rdmak8s
