// DeviceTracker: the device plugin's record of the RDMA devices it advertises and each one's
// health. It reads the node through Discovery (class/infiniband and what hangs off it) and keeps
// a device it knew after the node stopped showing it, so that a pod holding it is not left with an
// ID that vanished.
//
// Every method logs the decisions it makes (found, now unhealthy, disappeared) once, here; the
// caller publishes the result. Not thread safe: one thread (the daemon's event loop).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "device-plugin/health.h"
#include "device-plugin/pool_state.h"
#include "rdmak8s/discovery.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dp {

class DeviceTracker {
 public:
  // `discovery` is not owned and must outlive the tracker; `sysfs_root` is the same root it
  // reads (netdev operstate is read under it for health).
  DeviceTracker(Discovery* discovery, std::string sysfs_root);

  // Re-reads every device (Discovery::DiscoverAll). A device discovery could not read fully
  // turns Unhealthy ("unreadable: ..."); one no longer shown turns Unhealthy ("device gone").
  // When discovery fails as a whole, what was known is kept and the error returned.
  Status Rescan();
  // Re-reads one device (Discovery::DiscoverOne); kNotFound makes it "device gone", another
  // error "unreadable: ...". An unknown device that is found is added.
  void Refresh(const std::string& rdma_dev);
  // Re-reads only the port states of a tracked, present device and re-evaluates its health: what
  // a link event changes. False when it cannot (unknown, gone, or an attribute that does not
  // read as expected): the caller then uses Refresh.
  bool RefreshPorts(const std::string& rdma_dev);

  // Tracked devices one of whose netdevs is `netdev`.
  std::vector<std::string> DevicesOnNetdev(std::string_view netdev) const;
  // Tracked devices the node still shows (whose verbs async events can be listened to).
  std::vector<std::string> Present() const;
  // Every tracked device, gone ones included, by rdma_dev.
  const std::map<std::string, TrackedDevice>& devices() const { return known_; }

 private:
  DeviceHealth Evaluate(const RdmaDevice& dev) const;

  Discovery* discovery_;
  std::string sysfs_root_;
  std::map<std::string, TrackedDevice> known_;
};

}  // namespace rdmak8s::dp
