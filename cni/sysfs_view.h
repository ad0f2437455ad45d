// SysfsView: how the CNI reads the sysfs of another network namespace.
//
// class/net and class/infiniband are network-namespace tagged in the kernel (ib_class has
// ns_type = net_ns_type_operations since Linux 5.2): which entries a sysfs mount shows is fixed
// by the netns of the task that MOUNTED it, not of the task reading it. So after an exclusive
// mode move, the host's /sys no longer shows the RDMA device, and setns(2) into the pod does not
// change what /sys shows. MountingSysfsView therefore makes a fresh sysfs mount while inside the
// pod's netns, never attached anywhere: with the new mount API (fsopen, fsconfig CMD_CREATE,
// fsmount; Linux 5.2+) from the calling thread switched into the pod's netns for those three
// calls. Where the kernel lacks them or refuses them (ENOSYS, a seccomp filter), the old way: a
// mount(2) in a private mount namespace of a short-lived thread (unshare(CLONE_FS|CLONE_NEWNS))
// on a temporary directory, an O_PATH descriptor on its root, then umount2 MNT_DETACH before the
// thread ends. Either way nothing is left mounted anywhere, the descriptor keeps the detached
// mount alive, and "/proc/self/fd/<fd>/..." reaches it from any thread of the process, with the
// pod's tags, for as long as the handle lives. One mount per invocation, however many reads
// (DeviceResolver keeps the handle).
//
// FixedSysfsView hands back a fixed root: fixture trees in tests, or a netconf sysfsRoot.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netns.h"

namespace rdmak8s::cni {

// A sysfs root (a path) usable while this handle lives. Not copyable.
class SysfsRoot {
 public:
  explicit SysfsRoot(std::string path, int fd = -1) : path_(std::move(path)), fd_(fd) {}
  ~SysfsRoot();
  SysfsRoot(const SysfsRoot&) = delete;
  SysfsRoot& operator=(const SysfsRoot&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_;  // owned; -1 for a plain directory
};

class SysfsView {
 public:
  virtual ~SysfsView() = default;
  // A root showing `ns`'s view of sysfs; why there is none otherwise.
  virtual StatusOr<std::unique_ptr<SysfsRoot>> Open(const Netns& ns) = 0;
  // Open, then fn(root): for a one-off read. Returns fn's Status (or why no view).
  Status InNetns(const Netns& ns, const std::function<Status(const std::string&)>& fn);
};

class FixedSysfsView : public SysfsView {
 public:
  explicit FixedSysfsView(std::string root) : root_(std::move(root)) {}
  StatusOr<std::unique_ptr<SysfsRoot>> Open(const Netns&) override {
    return std::make_unique<SysfsRoot>(root_);
  }

 private:
  std::string root_;
};

class MountingSysfsView : public SysfsView {
 public:
  // `new_mount_api` false: only the old way (tests of the fallback).
  explicit MountingSysfsView(bool new_mount_api = true) : new_mount_api_(new_mount_api) {}
  StatusOr<std::unique_ptr<SysfsRoot>> Open(const Netns& ns) override;

 private:
  bool new_mount_api_;
};

}  // namespace rdmak8s::cni
