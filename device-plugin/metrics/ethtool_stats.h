// EthtoolStats: a netdev's driver statistics by name (what `ethtool -S <netdev>` prints), the
// seam through which a scrape reads PFC pause counters. One real implementation over the
// SIOCETHTOOL ioctl (ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS for the names of
// ETH_SS_STATS, ETHTOOL_GSTATS for the values); tests use an in-memory fake.
//
// Why not netlink ETHTOOL_MSG_STATS_GET: its groups (eth-phy, eth-mac, eth-ctrl, rmon) and the
// pause statistics of ETHTOOL_MSG_PAUSE_GET are per port, not per priority; per-priority PFC
// counters exist only among each driver's named statistics, which netlink ethtool does not
// carry (ETH_SS_STATS strings are ioctl-only to this day).
//
// Thread safety: Read may be called from any thread (each call opens its own socket).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

using NamedStats = std::vector<std::pair<std::string, uint64_t>>;

class EthtoolStats {
 public:
  virtual ~EthtoolStats() = default;
  // The statistics of `netdev` in the driver's order. kNotFound when there is no such netdev
  // (ENODEV); kUnimplemented when its driver has no statistics (EOPNOTSUPP, or none); otherwise
  // the ioctl that failed and its errno.
  virtual StatusOr<NamedStats> Read(const std::string& netdev) = 0;
};

// Over SIOCETHTOOL in the caller's network namespace (the node's: the plugin runs with the host
// network).
class IoctlEthtoolStats final : public EthtoolStats {
 public:
  StatusOr<NamedStats> Read(const std::string& netdev) override;
};

}  // namespace rdmak8s::dp
