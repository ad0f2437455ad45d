// Which of the node's RDMA devices this DRA driver takes (--devices): a file holding one JSON
// object {"selectors": {...}} with the device plugin's selector keys (vendors, deviceIDs,
// drivers, pciAddresses, rdmaDevices, netdevs, linkTypes, transports, numaNodes, isVF, pfNames;
// docs/device-plugin.md), so one node can split its devices between the device plugin's pools
// and DRA without both advertising one device. No file: every RDMA device of the node.
//
// Parsing is strict (unknown keys, wrong types and bad values are kInvalidArgument naming the
// key), and the file is the node admin's, read once at start. Thread safety: a DeviceFilter is
// immutable.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "node/selectors.h"
#include "node/tracked_device.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

class DeviceFilter {
 public:
  DeviceFilter() = default;  // takes every device
  explicit DeviceFilter(node::Selectors selectors) : selectors_(std::move(selectors)) {}

  // The filter a --devices file's text says; errors name the key ("$.selectors.transports[0]").
  static StatusOr<DeviceFilter> Parse(std::string_view json_text);
  // Parse of the file at `path`; an unreadable file is an error naming it.
  static StatusOr<DeviceFilter> Load(const std::string& path);

  // The devices of `tracked` (rdma_dev -> device, as DeviceTracker::devices()) the driver takes.
  std::map<std::string, node::TrackedDevice> Apply(
      const std::map<std::string, node::TrackedDevice>& tracked) const;
  bool takes_all() const { return !selectors_.has_value(); }

 private:
  std::optional<node::Selectors> selectors_;
};

}  // namespace rdmak8s::dra
