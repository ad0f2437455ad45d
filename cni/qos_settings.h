// QoS settings by id, as the CNI's records keep them: each node setting the qos block asks for,
// as an id -> value pair, read and written through common's typed table (rdmak8s/qos/qos_setting.h:
// the kinds, their key format, values and where each lives). The id is QosSetting::Key(), so
// two attachments asking for the same id share the setting (and conflict when they ask for
// different values); the ids and values are those the records and knobs.json of every release
// hold (cni/state.h).
//
// Read/Write return kUnimplemented when this driver/kernel has no such setting, kInvalidArgument
// for an id that names no setting (QosSetting::FromKey).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/qos/qos_policy.h"
#include "rdmak8s/qos/qos_setting.h"

namespace rdmak8s::cni {

// The knobs `qos` asks for on `pf_netdev` (may be empty: no node-wide knobs possible) and
// `rdma_dev`'s `ports`, by id.
std::map<std::string, std::string> RequiredQosSettings(const QosPolicy& qos, const std::string& pf_netdev,
                                                 const std::string& rdma_dev,
                                                 const std::vector<uint32_t>& ports);

// True for knobs whose object is the node's PF (restored by the last attachment needing them).
// False for an id that names no setting.
bool IsNodeWideQosSetting(const std::string& id);
// True for knobs set through DCB netlink (trust, pfc, app). False for an id that names no setting.
bool IsDcbQosSetting(const std::string& id);

// Current value of a knob ("off" for a PFC bit that is clear, "none" for a missing APP entry).
StatusOr<std::string> ReadQosSetting(const QosSettingContext& ctx, const std::string& id);
Status WriteQosSetting(const QosSettingContext& ctx, const std::string& id, const std::string& value);

}  // namespace rdmak8s::cni
