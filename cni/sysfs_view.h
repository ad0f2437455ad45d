// SysfsView: how the CNI reads the sysfs of another network namespace.
//
// class/net and class/infiniband are network-namespace tagged in the kernel (ib_class has
// ns_type = net_ns_type_operations since Linux 5.2): which entries a sysfs mount shows is fixed
// by the netns of the task that MOUNTED it, not of the task reading it. So after an exclusive
// mode move, the host's /sys no longer shows the RDMA device, and setns(2) into the pod does not
// change what /sys shows. MountingSysfsView therefore mounts a fresh sysfs while inside the pod's
// netns, in a private mount namespace of a short-lived thread (unshare(CLONE_FS|CLONE_NEWNS)),
// and runs the reader there; the mount vanishes with the thread.
//
// FixedSysfsView hands back a fixed root: fixture trees in tests, or a netconf sysfsRoot.
#pragma once

#include <functional>
#include <string>

#include "rdmak8s/netns.h"
#include "rdmak8s/status.h"

namespace rdmak8s::cni {

class SysfsView {
 public:
  virtual ~SysfsView() = default;
  // Runs fn with a sysfs root showing `ns`'s view; returns fn's Status (or why no view).
  virtual Status InNetns(const Netns& ns, const std::function<Status(const std::string&)>& fn) = 0;
};

class FixedSysfsView : public SysfsView {
 public:
  explicit FixedSysfsView(std::string root) : root_(std::move(root)) {}
  Status InNetns(const Netns&, const std::function<Status(const std::string&)>& fn) override {
    return fn(root_);
  }

 private:
  std::string root_;
};

class MountingSysfsView : public SysfsView {
 public:
  Status InNetns(const Netns& ns, const std::function<Status(const std::string&)>& fn) override;
};

}  // namespace rdmak8s::cni
