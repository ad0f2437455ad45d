// RdmaNetlink: the kernel's RDMA netlink (NETLINK_RDMA, RDMA_NL_NLDEV), as iproute2's `rdma`
// speaks it: list devices, the system netns mode, moving a device to a netns, renaming.
//
// A real implementation (ChannelRdmaNetlink) talks to the kernel of the network namespace it was
// opened in; NewRdmaNetlink() opens it in the caller's current netns. Tests use FakeRdmaNetlink
// (tests/), since this machine's kernel has no RDMA.
//
// Thread safety: one instance per thread (a netlink socket is not shared).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

// `rdma system show netns`: shared (every netns sees every RDMA device) or exclusive (a device
// belongs to one netns and must be moved there).
enum class RdmaNetnsMode { kShared, kExclusive };
std::string_view RdmaNetnsModeName(RdmaNetnsMode m);  // "shared" | "exclusive"

struct RdmaLinkInfo {
  uint32_t index = 0;   // RDMA_NLDEV_ATTR_DEV_INDEX
  std::string name;     // RDMA_NLDEV_ATTR_DEV_NAME
  uint32_t num_ports = 0;
  std::string node_guid;
};

class RdmaNetlink {
 public:
  virtual ~RdmaNetlink() = default;
  // RDMA_NLDEV_CMD_GET dump: the devices visible in this netns.
  virtual StatusOr<std::vector<RdmaLinkInfo>> ListDevices() = 0;
  // RDMA_NLDEV_CMD_SYS_GET / RDMA_NLDEV_SYS_ATTR_NETNS_MODE.
  virtual StatusOr<RdmaNetnsMode> GetNetnsMode() = 0;
  // RDMA_NLDEV_CMD_SYS_SET. The kernel refuses (EBUSY) once other netns exist.
  virtual Status SetNetnsMode(RdmaNetnsMode mode) = 0;
  // RDMA_NLDEV_CMD_SET with RDMA_NLDEV_NET_NS_FD. kNotFound when the device is not visible here;
  // kFailedPrecondition in shared mode; kUnimplemented when the device has no netns support
  // (siw: "no disassociate support"); kPermissionDenied without CAP_NET_ADMIN over the target.
  // The message carries the kernel's extack text when given. (The kernel answers EOPNOTSUPP in
  // shared mode too; the real implementation re-reads the mode to tell the two apart.)
  virtual Status MoveToNetns(std::string_view rdma_dev, int netns_fd) = 0;
  // RDMA_NLDEV_CMD_SET with RDMA_NLDEV_ATTR_DEV_NAME.
  virtual Status Rename(std::string_view rdma_dev, std::string_view new_name) = 0;
};

// Opens NETLINK_RDMA in the calling thread's current netns.
StatusOr<std::unique_ptr<RdmaNetlink>> NewRdmaNetlink();

}  // namespace rdmak8s
