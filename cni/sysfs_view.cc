#include "cni/sysfs_view.h"

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

namespace rdmak8s::cni {

Status MountingSysfsView::InNetns(const Netns& ns,
                                  const std::function<Status(const std::string&)>& fn) {
  Status result;
  // A dedicated thread: unsharing its fs/mount namespace and joining the pod netns must not
  // leak into the caller's thread; everything ends when the thread does.
  std::thread t([&] {
    if (unshare(CLONE_FS | CLONE_NEWNS) != 0) {
      result = ErrnoError(errno, "unshare mount namespace to read the pod's sysfs");
      return;
    }
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      result = ErrnoError(errno, "make mounts private to read the pod's sysfs");
      return;
    }
    if (setns(ns.fd(), CLONE_NEWNET) != 0) {
      result = ErrnoError(errno, "enter netns " + ns.path());
      return;
    }
    char dir[] = "/tmp/rdmak8s-sysfs-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      result = ErrnoError(errno, "mkdtemp /tmp/rdmak8s-sysfs-XXXXXX");
      return;
    }
    if (mount("sysfs", dir, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      result = ErrnoError(errno, std::string("mount sysfs of netns ") + ns.path() + " on " + dir);
      rmdir(dir);
      return;
    }
    result = fn(dir);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
  });
  t.join();
  return result;
}

}  // namespace rdmak8s::cni
