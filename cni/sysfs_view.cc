#include "cni/sysfs_view.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

namespace rdmak8s::cni {

SysfsRoot::~SysfsRoot() {
  if (fd_ >= 0) close(fd_);
}

Status SysfsView::InNetns(const Netns& ns, const std::function<Status(const std::string&)>& fn) {
  RDMAK8S_ASSIGN_OR_RETURN(auto root, Open(ns));
  return fn(root->path());
}

namespace {

// The new mount API (Linux 5.2; glibc 2.36 wrappers), from this thread switched into `ns`:
// fsopen tags the sysfs superblock with the caller's netns (sysfs_init_fs_context:
// kobj_ns_grab_current), fsmount makes a detached mount of it, attached nowhere.
StatusOr<int> DetachedSysfsMount(const Netns& ns) {
  int mnt = -1;
  RDMAK8S_RETURN_IF_ERROR(RunInNetns(ns, [&]() -> Status {
    int fs = fsopen("sysfs", FSOPEN_CLOEXEC);
    if (fs < 0) return ErrnoError(errno, "fsopen sysfs in netns " + ns.path());
    Status r;
    if (fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
      r = ErrnoError(errno, "create a sysfs superblock in netns " + ns.path());
    } else {
      mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
      if (mnt < 0) r = ErrnoError(errno, "fsmount the sysfs of netns " + ns.path());
    }
    close(fs);
    return r;
  }));
  return mnt;
}

// The same with the old mount(2): in a short-lived thread's private mount namespace, on a
// temporary directory, detached once a descriptor holds it.
StatusOr<int> MountedAndDetachedSysfs(const Netns& ns) {
  Status result;
  int fd = -1;
  // A dedicated thread: unsharing its fs/mount namespace and joining the pod netns must not
  // leak into the caller's thread; its mount namespace ends with it.
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
    // sysfs_get_tree tags the superblock with the mounting task's netns (kobj_ns_grab_current).
    if (mount("sysfs", dir, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      result = ErrnoError(errno, std::string("mount sysfs of netns ") + ns.path() + " on " + dir);
      rmdir(dir);
      return;
    }
    fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) result = ErrnoError(errno, std::string("open the sysfs mount of netns ") + ns.path());
    umount2(dir, MNT_DETACH);  // the descriptor keeps the detached mount
    rmdir(dir);
  });
  t.join();
  if (!result.ok()) return result;
  return fd;
}

}  // namespace

StatusOr<std::unique_ptr<SysfsRoot>> MountingSysfsView::Open(const Netns& ns) {
  StatusOr<int> fd = UnimplementedError("the new mount API is not used");
  if (new_mount_api_) fd = DetachedSysfsMount(ns);
  if (!fd.ok()) {
    // Kernels before 5.2, or a seccomp filter that denies the new calls: the old way, whose
    // error is the one reported.
    fd = MountedAndDetachedSysfs(ns);
    if (!fd.ok()) return fd.status();
  }
  return std::make_unique<SysfsRoot>("/proc/self/fd/" + std::to_string(*fd), *fd);
}

}  // namespace rdmak8s::cni
