// Internal sysfs read helpers (discovery, port state, device look-up): one open directory,
// attributes read relative to it with openat(2), so deep sysfs paths are resolved once per device
// rather than once per attribute.
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

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device_id.h"
#include "rdmak8s/device/port_state.h"
#include "rdmak8s/device/sysfs_attr.h"

namespace rdmak8s::internal {

// The open-directory reader is public (rdmak8s/device/sysfs_attr.h): the CNI reads GID tables with
// it.
using ::rdmak8s::SysfsDir;

// Entry names of directory `path` (absolute or cwd-relative), without "." and "..", unsorted.
// kNotFound when it does not exist. One open, getdents64 until the end, one close.
StatusOr<std::vector<std::string>> ListPath(const std::string& path);

// readlink(2) of an absolute or cwd-relative path.
StatusOr<std::string> ReadLinkPath(const std::string& path);

// The one number parser (rdmak8s/base/numbers.h, through sysfs_attr.h): the CNI parses GID indexes
// and knob IDs with it.
using ::rdmak8s::ParseInt;
using ::rdmak8s::ParseUint;
// "4: ACTIVE" -> {4, "ACTIVE"}: the kernel's "<n>: <name>" attributes.
struct NumberedName {
  uint32_t number = 0;
  std::string name;
};
StatusOr<NumberedName> ParseNumberedName(std::string_view text, std::string_view what);
// The one ID rule (rdmak8s/device/device_id.h).
using ::rdmak8s::IsPciAddress;

// The "state" and "phys_state" attributes of a port directory (ports/<n>), each "<n>: <name>":
// the one parser discovery's Port and ReadPortLinkState share (port_state.cc).
StatusOr<PortLinkState> ReadPortLinkStateIn(const SysfsDir& port_dir);

}  // namespace rdmak8s::internal
