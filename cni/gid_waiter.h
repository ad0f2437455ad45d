// GidWaiter: the RoCE v2 GIDs of the pod interface's IPs. The kernel adds a GID table entry for
// each IP of a RoCE device's netdev (drivers/infiniband/core/roce_gid_mgmt.c) some time after the
// address shows; ADD waits for every one (and reports its GID index, which RoCE applications
// pass as their GID index), CHECK looks once.
//
// Each failure is recorded on the FailureCode with the code named below. Not thread safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cni/device_resolver.h"
#include "cni/failure_code.h"
#include "cni/log.h"
#include "cni/plugin_options.h"
#include "cni/state.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netns.h"

namespace rdmak8s::cni {

// A RoCE v2 GID of a pod address, where the port's GID table has it.
struct FoundGid {
  std::string ip;    // the pod's address ("10.0.0.5")
  std::string gid;   // GidForIp's form
  uint32_t port = 0;
  uint32_t index = 0;  // what RoCE applications pass as their GID index
};

class GidWaiter {
 public:
  // `options`: the rtnetlink factory and gid_poll_interval_ms. `ifname`: CNI_IFNAME, the pod
  // interface. `resolver`: where the device's GID table shows (the pod's view once moved).
  GidWaiter(const PluginOptions& options, std::string ifname, DeviceResolver& resolver, Logger& log,
            FailureCode& failure);

  // Enables IPv6 on the pod interface (its disable_ipv6 sysctl, written from inside the pod's
  // netns), so the kernel gives it a link-local address and hence a GID. The open or write error
  // (nothing recorded: the caller decides the code).
  Status EnsureIpv6(const Netns& pod);
  // Waits up to `timeout_ms` (0: looks once), polling every gid_poll_interval_ms, for the RoCE v2
  // GID of each IP of the pod interface on one of `ports` of rec's device; `report` logs the GID
  // index found for each. No IP: success with a warning. 102 naming the missing GIDs and their
  // IPs at the deadline; 101 when the pod interface is gone; 5 when rtnetlink or the GID table
  // can't be read. Each poll reads the filled prefix of the GID table (rdmak8s/device/gid_table.h,
  // GidScope::kFilledPrefix); the whole table only when the prefix stays the same across two
  // polls and on the last look at the deadline (so at once when timeout_ms is 0), a GID past a
  // hole is found then. Nothing is read from the table when the interface has no IP.
  // `found` (when given) gets each GID found, on success.
  Status CheckGids(const AttachmentRecord& rec, const Netns& pod, const std::vector<uint32_t>& ports,
                   int timeout_ms, bool report, std::vector<FoundGid>* found = nullptr);

 private:
  const PluginOptions& o_;
  std::string ifname_;
  DeviceResolver& resolver_;
  Logger& log_;
  FailureCode& failure_;
};

}  // namespace rdmak8s::cni
