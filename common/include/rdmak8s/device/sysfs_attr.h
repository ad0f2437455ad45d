// The one way the project reads sysfs by path: an attribute, a directory listing, and where a
// link leads inside a sysfs tree. Discovery's per-device reads (common/src/device/sysfs.h) use the
// same reader relative to an open directory.
//
// Errors name the path: "read <path>: <strerror>". ENOENT is kNotFound ("missing"); a dangling
// symlink is NOT missing (the name exists, its target does not): kInternal. EINVAL from read(2)
// (the kernel's answer for e.g. gid_attrs of an empty GID) is kInvalidArgument. Anything else
// ("unreadable") keeps its errno's code.
//
// The root of a tree may be "/proc/self/fd/<N>", a handle on the sysfs mount of another netns
// (cni/sysfs_view.h): links are therefore resolved lexically inside the tree, never with
// realpath(3), which would give a path of the caller's mount namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/numbers.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s {

// The attribute's text with trailing whitespace and newlines removed.
StatusOr<std::string> ReadSysfsAttr(const std::string& path);

// The same read of `rel` opened beneath `root` (file_util.h OpenBeneath: a link out of the tree
// fails, FailedPrecondition): for attributes we may also write (the CNI's QoS knobs).
StatusOr<std::string> ReadSysfsAttrBeneath(const std::string& root, const std::string& rel);

// Entry names of directory `path`, without "." and "..", sorted. kNotFound when it does not
// exist.
StatusOr<std::vector<std::string>> ListSysfsDir(const std::string& path);

// `rel` (relative to `root`) with every symlink on the way resolved lexically inside the tree:
// the path relative to `root` it leads to. "" when a component is missing or unreadable, or a
// link leaves the tree (an absolute target, or ".." above the root).
std::string ResolveInSysfsTree(const std::string& root, const std::string& rel);

// An attribute's number: ParseUint ("0x1a", "26") and ParseInt ("-1") are the project's one
// number parser, rdmak8s/base/numbers.h (included here for sysfs readers).

// One open sysfs directory whose attributes are read relative to it with openat(2): a deep path
// (a device, a GID table of 1,024 entries) is walked once, not once per attribute. Reads follow
// the rules above; errors name the full path.
class SysfsDir {
 public:
  // Opens `path` (following symlinks). kNotFound when it does not exist.
  static StatusOr<SysfsDir> Open(std::string path);

  SysfsDir(SysfsDir&& other) noexcept;
  SysfsDir& operator=(SysfsDir&& other) noexcept;
  SysfsDir(const SysfsDir&) = delete;
  SysfsDir& operator=(const SysfsDir&) = delete;
  ~SysfsDir();

  const std::string& path() const { return path_; }
  std::string PathOf(std::string_view rel) const;

  // The attribute's text with trailing whitespace/newlines removed.
  StatusOr<std::string> Read(std::string_view rel) const;
  // Same, but a missing attribute is nullopt rather than an error.
  StatusOr<std::optional<std::string>> ReadOptional(std::string_view rel) const;
  // readlink(2) of `rel`. kNotFound when missing; kInvalidArgument when not a symlink.
  StatusOr<std::string> ReadLink(std::string_view rel) const;
  // Entry names of subdirectory `rel` ("" for this one), without "." and "..", unsorted.
  // kNotFound when it does not exist.
  StatusOr<std::vector<std::string>> List(std::string_view rel = "") const;
  // Opens subdirectory `rel`.
  StatusOr<SysfsDir> Sub(std::string_view rel) const;

 private:
  SysfsDir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Status ErrorFor(int err, std::string_view op, std::string_view rel) const;

  int fd_ = -1;
  std::string path_;
};

}  // namespace rdmak8s
