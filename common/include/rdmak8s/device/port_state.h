// The link state of one RDMA port, re-read on its own: what a link or port event changes, without
// re-discovering the device (discovery.h reads the same attributes, with the same parser, when it
// builds a Port).
//
//   <sysfs_root>/class/infiniband/<rdma_dev>/ports/<port_num>/state       "4: ACTIVE"
//   <sysfs_root>/class/infiniband/<rdma_dev>/ports/<port_num>/phys_state  "5: LinkUp"
// (drivers/infiniband/core/sysfs.c state_show, phys_state_show.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s {

struct PortLinkState {
  PortState state = PortState::kNop;  // a number the kernel does not define reads as kNop
  uint32_t phys_state = 0;
  std::string phys_state_name;
};

// kNotFound when the device, the port or an attribute is missing; kInvalidArgument naming the
// file when an attribute is not "<n>: <name>"; other errors name the path and errno.
StatusOr<PortLinkState> ReadPortLinkState(const std::string& sysfs_root, std::string_view rdma_dev,
                                          uint32_t port_num);

}  // namespace rdmak8s
