// Network namespaces via open(2), fstatfs(2) (NSFS_MAGIC), ioctl NS_GET_NSTYPE and setns(2).
#include "rdmak8s/netlink/netns.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rdmak8s {

Netns::Netns(Netns&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

Netns& Netns::operator=(Netns&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

Netns::~Netns() {
  if (fd_ >= 0) close(fd_);
}

bool Netns::SameAs(const Netns& other) const {
  struct stat a {}, b {};
  if (fd_ < 0 || other.fd_ < 0) return false;
  if (fstat(fd_, &a) != 0 || fstat(other.fd_, &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

StatusOr<Netns> OpenNetns(std::string_view path) {
  const std::string p(path);
  int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open netns " + p);
  Netns ns(fd, p);  // closes fd on every early return below
  struct statfs sfs {};
  if (fstatfs(fd, &sfs) != 0) return ErrnoError(errno, "fstatfs netns " + p);
  if (sfs.f_type != NSFS_MAGIC) {
    return InvalidArgumentError("open netns " + p + ": not a namespace file (not on nsfs)");
  }
  int type = ioctl(fd, NS_GET_NSTYPE);
  if (type < 0) return ErrnoError(errno, "ioctl NS_GET_NSTYPE " + p);
  if (type != CLONE_NEWNET) {
    return InvalidArgumentError("open netns " + p + ": a namespace, but not a network namespace");
  }
  return ns;
}

StatusOr<Netns> CurrentNetns() { return OpenNetns("/proc/thread-self/ns/net"); }

Status RunInNetns(const Netns& ns, const std::function<Status()>& fn) {
  if (!ns.valid()) return InvalidArgumentError("run in netns: no namespace open");
  auto original = CurrentNetns();
  if (!original.ok()) return original.status().Prepend("run in netns " + ns.path());
  if (setns(ns.fd(), CLONE_NEWNET) != 0) {
    return ErrnoError(errno, "setns to " + ns.path());
  }
  Status result = fn();
  if (setns(original->fd(), CLONE_NEWNET) != 0) {
    // Every later syscall of this thread would act in the wrong netns: a broken invariant.
    std::fprintf(stderr, "rdmak8s: FATAL: setns back from %s to %s: %s\n", ns.path().c_str(),
                 original->path().c_str(), std::strerror(errno));
    std::abort();
  }
  return result;
}

}  // namespace rdmak8s
