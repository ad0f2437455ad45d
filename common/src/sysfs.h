// Internal sysfs read helpers for discovery: one open directory, attributes read relative to it
// with openat(2), so deep sysfs paths are resolved once per device rather than once per
// attribute.
//
// Errors name the full path: "read <path>: <strerror>". ENOENT is kNotFound ("missing"); a
// dangling symlink is NOT missing (the name exists, its target does not): kInternal. EINVAL from
// read(2) (what the kernel returns for e.g. gid_attrs of an empty GID) is kInvalidArgument.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/device_id.h"
#include "rdmak8s/sysfs_attr.h"
#include "rdmak8s/port_state.h"
#include "rdmak8s/status.h"

namespace rdmak8s::internal {

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

// Entry names of directory `path` (absolute or cwd-relative), without "." and "..", unsorted.
// kNotFound when it does not exist. One open, getdents64 until the end, one close.
StatusOr<std::vector<std::string>> ListPath(const std::string& path);

// readlink(2) of an absolute or cwd-relative path.
StatusOr<std::string> ReadLinkPath(const std::string& path);

// "0x1a" (base 16 with prefix), "26": unsigned value; kInvalidArgument naming `what` otherwise.
StatusOr<uint64_t> ParseUint(std::string_view text, std::string_view what);
// "-1", "0": signed decimal.
StatusOr<int64_t> ParseInt(std::string_view text, std::string_view what);
// "4: ACTIVE" -> {4, "ACTIVE"}: the kernel's "<n>: <name>" attributes.
struct NumberedName {
  uint32_t number = 0;
  std::string name;
};
StatusOr<NumberedName> ParseNumberedName(std::string_view text, std::string_view what);
// The one ID rule (rdmak8s/device_id.h).
using ::rdmak8s::IsPciAddress;

// The "state" and "phys_state" attributes of a port directory (ports/<n>), each "<n>: <name>":
// the one parser discovery's Port and ReadPortLinkState share (port_state.cc).
StatusOr<PortLinkState> ReadPortLinkStateIn(const SysfsDir& port_dir);

}  // namespace rdmak8s::internal
