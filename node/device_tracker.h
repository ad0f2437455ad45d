// DeviceTracker: an agent's record of the node's RDMA devices (the device plugin's pools, the DRA
// driver's catalog both feed from it), where each one is (present on the node, moved into a pod,
// gone) and its health.
//
// It reads the node through Discovery (class/infiniband and what hangs off it). What the node can
// no longer see matters as much as what it sees: in RDMA netns mode exclusive the kernel hides a
// device moved into another network namespace (`rdma dev set <dev> netns <pod>`, what our CNI
// does) from the node's class/infiniband, from the bus device's infiniband/ directory and from
// RDMA netlink dumps, exactly as if it were gone. So a tracked device the node stops showing is
// judged by what still can be observed:
//   - its bus device (bus/pci/devices/<pci_addr>, bus/auxiliary/devices/<aux_name>) is missing:
//     kGone, Unhealthy ("bus device ... gone"), kept so a pod holding it sees it Unhealthy;
//   - the bus device is bound to another driver, or unbound, or its infiniband/ directory shows
//     an RDMA device that was not there beside ours (renamed, re-created VF, re-registered):
//     vanished for good, forgotten (no ghost that shares an exclusive ID with its successor);
//   - otherwise (bus device there, same driver, nothing new on it): kInPod, keeping its last
//     model and health; a netdev of it the node still shows can still turn it Unhealthy;
//   - a soft device (rxe, siw: no bus device) is taken as kInPod: nothing on the node tells a
//     move from a removal inside the pod (a netdev carrying it that leaves destroys it, and the
//     pod's uevents and RDMA netlink are not ours to read). A removal the node does see (an
//     "unregistered" uevent) makes any device kGone.
// A kInPod or kGone device that the node shows again is re-read (it came home); an absent one
// is never listed by Present(), so nobody opens a verbs context on it.
//
// Every method logs the decisions it makes (found, now unhealthy, moved, forgotten) once, here;
// the caller publishes the result. Not thread safe: the device watch's thread.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "node/health.h"
#include "node/tracked_device.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/discovery/discovery.h"

namespace rdmak8s::node {

class DeviceTracker {
 public:
  // `discovery` is not owned and must outlive the tracker; `sysfs_root` is the same root it
  // reads (bus devices and netdev operstate are read under it).
  DeviceTracker(Discovery* discovery, std::string sysfs_root);

  // Re-reads every device (Discovery::DiscoverAll). A device discovery could not read fully
  // turns Unhealthy ("unreadable: ..."); one no longer shown is judged as above. When discovery
  // fails as a whole, what was known is kept and the error returned.
  Status Rescan();
  // Re-reads one device (Discovery::DiscoverOne): found -> present (added when unknown);
  // kNotFound -> judged as above; another error -> Unhealthy "unreadable: ...".
  void Refresh(const std::string& rdma_dev);
  // The node reported the device unregistered (uevent): kGone unless the node still shows it
  // (then it is re-read, as after a rename onto the same name).
  void Unregistered(const std::string& rdma_dev);
  // Re-reads only ports/<n>/{state,phys_state} of a present device (ReadPortLinkState) and
  // re-evaluates its health: what a link event changes. An error (kNotFound: not tracked, not on
  // the node, an attribute missing; kInvalidArgument: an attribute not "<n>: <name>", naming the
  // file) changes nothing: the caller then uses Refresh, which decides what it means.
  Status RefreshPorts(const std::string& rdma_dev);

  // Tracked devices one of whose netdevs is `netdev`.
  std::vector<std::string> DevicesOnNetdev(std::string_view netdev) const;
  // RDMA devices a netdev nobody tracks may bring (a hot-plugged function's netdev, an upper
  // device of a tracked one), for re-reading just those: the ones on its bus device
  // (class/net/<netdev>/device/infiniband/*) and, through its lower_* links, the ones its lower
  // netdevs carry. Empty for a netdev without either (every pod's veth): nothing to read.
  std::vector<std::string> RdmaDevicesOfNetdev(std::string_view netdev) const;
  // Tracked devices the node shows (kPresent): the ones whose verbs async events can be heard.
  std::vector<std::string> Present() const;
  // Every tracked device, absent ones included, by rdma_dev.
  const std::map<std::string, TrackedDevice>& devices() const { return known_; }

 private:
  DeviceHealth Evaluate(const RdmaDevice& dev) const;
  void Found(RdmaDevice dev);
  // Judges a tracked device the node does not show. `before`: names tracked before this read,
  // to tell an RDMA device that sat beside ours on the same bus device from a successor.
  // False when the device is forgotten (the caller erases it).
  bool JudgeAbsent(const std::string& name, TrackedDevice& t, const std::set<std::string>& before);
  // Names of every tracked device (JudgeAbsent's `before`).
  std::set<std::string> KnownNames() const;

  Discovery* discovery_;
  std::string sysfs_root_;
  std::map<std::string, TrackedDevice> known_;
};

}  // namespace rdmak8s::node
