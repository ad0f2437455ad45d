// QoS settings: each node setting the qos block asks for, as an id -> value pair, and how to read
// and write it on the node. Ids name their object, so two attachments asking for the same id
// share the setting (and conflict when they ask for different values):
//   trust:<pf>              "dscp" | "pcp"          DCB APP trust table (dcbnl IEEE)
//   pfc:<pf>:<prio>         "on"                    DCB IEEE PFC enable bit
//   app:<pf>:<dscp>         "<prio>"                DCB IEEE APP entry, selector 5 (DSCP)
//   ecn:<pf>:<rp|np>:<prio> "1"                     <sysfs>/class/net/<pf>/ecn/roce_<rp|np>/enable/<prio> (mlx5)
//   tos:<rdma_dev>:<port>   "<0..255>"              <configfs>/rdma_cm/<rdma_dev>/ports/<port>/default_roce_tos
//   tc:<rdma_dev>:<port>    "<0..255>"              <sysfs>/class/infiniband/<rdma_dev>/tc/<port>/traffic_class
// trust, pfc, app and ecn are node-wide (the PF's); tos and tc belong to the RDMA device.
//
// Read/Write return kUnimplemented when this driver/kernel has no such setting (no dcbnl ops, no
// trust table, no ecn directory, rdma_cm configfs not mounted, no tc attribute).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "rdmak8s/qos_policy.h"
#include "rdmak8s/dcb_netlink.h"
#include "rdmak8s/status.h"

namespace rdmak8s::cni {

struct QosSettingContext {
  DcbNetlink* dcb = nullptr;     // null: DCB knobs unsupported
  std::string sysfs_root;        // host sysfs: ECN knobs of the PF netdev
  std::string dev_sysfs_root;    // sysfs where the RDMA device is visible now: tc knobs
  std::string configfs_root;     // rdma_cm configfs
};

// The knobs `qos` asks for on `pf_netdev` (may be empty: no node-wide knobs possible) and
// `rdma_dev`'s `ports`.
std::map<std::string, std::string> RequiredQosSettings(const QosPolicy& qos, const std::string& pf_netdev,
                                                 const std::string& rdma_dev,
                                                 const std::vector<uint32_t>& ports);

// True for knobs whose object is the node's PF (restored by the last attachment needing them).
bool IsNodeWideQosSetting(const std::string& id);
// True for knobs set through DCB netlink (trust, pfc, app).
bool IsDcbQosSetting(const std::string& id);

// Current value of a knob ("off" for a PFC bit that is clear, "none" for a missing APP entry).
StatusOr<std::string> ReadQosSetting(const QosSettingContext& ctx, const std::string& id);
Status WriteQosSetting(const QosSettingContext& ctx, const std::string& id, const std::string& value);

}  // namespace rdmak8s::cni
