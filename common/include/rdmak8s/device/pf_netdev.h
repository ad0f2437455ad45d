// The PF netdev rule: which netdev carries the settings of the physical function behind an RDMA
// device (DCB, ECN, PFC counters live there), one rule for discovery (RdmaDevice::pf_netdev) and
// the CNI (DeviceLookup::PfNetdev): the PF of a VF, the PCI owner of an SF (its PF when the owner
// is a VF), the device itself for a PF, a soft device's lower netdev.
//   <bus device>/{physfn,net/}, resolved lexically inside the tree (sysfs_attr.h)
#pragma once

#include <string>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

// `bus_rel`: the directory of the RDMA device's bus device relative to `root` (devices/...; ""
// for a device with none, a soft device); `lower_netdev`: the netdev a soft device runs on. The
// first netdev (by name) of the PF's net/, or `lower_netdev` when there is no bus device.
// Relative to `root`: a device read in a pod's view finds its PF netdev in the node's view given
// the same bus_rel (devices/ is not netns tagged). kNotFound when there is none; other errors
// name the directory that could not be listed.
StatusOr<std::string> PfNetdevAt(const std::string& root, const std::string& bus_rel,
                                 const std::string& lower_netdev, const std::string& rdma_dev);

}  // namespace rdmak8s
