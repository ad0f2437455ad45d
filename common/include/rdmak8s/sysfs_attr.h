// The one way the project reads sysfs by path: an attribute, a directory listing, and where a
// link leads inside a sysfs tree. Discovery's per-device reads (common/src/sysfs.h) use the same
// reader relative to an open directory.
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

#include <string>
#include <vector>

#include "rdmak8s/status.h"

namespace rdmak8s {

// The attribute's text with trailing whitespace and newlines removed.
StatusOr<std::string> ReadSysfsAttr(const std::string& path);

// The same read of `name` relative to the open directory `dirfd` (an O_PATH descriptor on e.g.
// a GID table: one path walk for the directory, not one per entry); errors name `dir_path`/name.
StatusOr<std::string> ReadSysfsAttrAt(int dirfd, const std::string& name, const std::string& dir_path);

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

}  // namespace rdmak8s
