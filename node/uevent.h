// Kernel uevents for RDMA devices: how an agent hears of an RDMA device registered or removed
// without any netdev event (`rdma link add rxe0 type rxe netdev eth0` on an existing netdev, an
// IB HCA hot-plugged, an RDMA driver loaded after its NIC's netdev came up).
//
// ib_register_device() (drivers/infiniband/core/device.c) holds the device's KOBJ_ADD uevent back
// until its sysfs (ports, GIDs) and its clients' char devices (uverbs, umad) exist, then sends
// "add@<devpath>" with SUBSYSTEM=infiniband and NAME=<rdma_dev> on NETLINK_KOBJECT_UEVENT (group
// 1, kernel messages); unregistering sends "remove", renaming "move" with DEVPATH_OLD. The RDMA
// netlink NOTIFY group (RDMA_NL_GROUP_NOTIFY, RDMA_NLDEV_CMD_MONITOR) carries the same news only
// on recent kernels (6.9+), so uevents are what we listen to.
//
// ParseUevent is pure (tested on bytes). The source reads datagrams from a file descriptor: the
// kernel's uevent socket in production, one end of a socketpair in tests — the seam is the fd, so
// tests go through the same parsing and filtering.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node/device_events.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

struct Uevent {
  std::string action;     // "add", "remove", "move", "change", ...
  std::string devpath;    // "/devices/virtual/infiniband/rxe0"
  std::string subsystem;  // "infiniband", "net", ...
  std::map<std::string, std::string> env;  // every KEY=VALUE, including the three above
};

// One kernel uevent datagram: "<action>@<devpath>\0KEY=VALUE\0...". nullopt for anything else:
// udev's re-broadcasts ("libudev\0" + binary header), a missing '@' header, or no ACTION /
// SUBSYSTEM.
std::optional<Uevent> ParseUevent(std::string_view datagram);

// What an infiniband-subsystem uevent means for the plugin: "registered" (add), "unregistered"
// (remove), or for a rename both (the old name unregistered, the new one registered). Empty for
// other subsystems and actions. The device name is NAME=, else the last DEVPATH component.
std::vector<DeviceEvent> RdmaDeviceEventsOf(const Uevent& uevent);

// A DeviceEventSource over uevent datagrams read from `fd` (taken over, closed on destruction).
// Datagrams from a netlink sender other than the kernel (nl_pid != 0) are dropped. Watch() is a
// no-op: uevents cover every device.
std::unique_ptr<DeviceEventSource> NewUeventSourceOnFd(int fd);
// The kernel's uevent socket (NETLINK_KOBJECT_UEVENT, multicast group 1), non-blocking.
StatusOr<std::unique_ptr<DeviceEventSource>> NewKernelUeventSource();

}  // namespace rdmak8s::node
