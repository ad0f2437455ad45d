// What an agent knows of one RDMA device it tracks (device_tracker.h): its last model, its
// health and where it is. Plain values, no protobuf: the device plugin's pool state and the DRA
// driver's catalog both hold these.
#pragma once

#include "node/health.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::node {

// Where a tracked device is, as the node can tell (device_tracker.h).
//   kPresent  the node shows it (class/infiniband/<dev>).
//   kInPod    the node no longer shows it but its bus device stays: moved into a pod's network
//             namespace (RDMA netns mode exclusive hides it from the node).
//   kGone     unregistered or its bus device disappeared.
enum class Presence { kPresent, kInPod, kGone };

struct TrackedDevice {
  RdmaDevice dev;       // last known model (kept after it disappeared)
  DeviceHealth health;
  Presence presence = Presence::kPresent;
};

}  // namespace rdmak8s::node
