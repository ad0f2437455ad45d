// SysfsView: how the CNI reads the sysfs of another network namespace.
//
// class/net and class/infiniband are network-namespace tagged in the kernel (ib_class has
// ns_type = net_ns_type_operations since Linux 5.2): which entries a sysfs mount shows is fixed
// by the netns of the task that MOUNTED it, not of the task reading it. So after an exclusive
// mode move, the host's /sys no longer shows the RDMA device, and setns(2) into the pod does not
// change what /sys shows. MountingSysfsView therefore mounts a fresh sysfs while inside the pod's
// netns, in a private mount namespace of a short-lived thread (unshare(CLONE_FS|CLONE_NEWNS)),
// keeps an O_PATH descriptor on the mount's root and detaches the mount (umount2 MNT_DETACH)
// before the thread ends: nothing is left mounted anywhere, the descriptor keeps the detached
// mount alive, and "/proc/self/fd/<fd>/..." reaches it from any thread of the process, with the
// pod's tags, for as long as the handle lives. One mount per invocation, however many reads.
//
// FixedSysfsView hands back a fixed root: fixture trees in tests, or a netconf sysfsRoot.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rdmak8s/netns.h"
#include "rdmak8s/status.h"

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
  StatusOr<std::unique_ptr<SysfsRoot>> Open(const Netns& ns) override;
};

}  // namespace rdmak8s::cni
