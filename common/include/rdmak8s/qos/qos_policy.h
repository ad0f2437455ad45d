// The QoS policy a network asks for: the `qos` block of an rdmak8s netconf (docs/cni.md), parsed
// and validated into plain values. The CNI applies it to the node (the settings it needs, read
// and written: qos_setting.h; applied and undone: cni/qos_changes.h); the node check (inspect/)
// judges the node against it. Only the policy and its rules: nothing here reads or writes the node.
//
// Untrusted input (a NetworkAttachmentDefinition). Parsing uses nlohmann::json; its exceptions
// stop here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

struct QosPolicy {
  std::optional<std::string> trust;             // "dscp" | "pcp"
  std::vector<uint8_t> pfc;                     // priorities 0..7 that need PFC on
  std::map<uint8_t, uint8_t> dscp_to_priority;  // DSCP 0..63 -> priority 0..7
  std::vector<uint8_t> ecn;                     // priorities 0..7 with ECN on (RP and NP)
  std::optional<uint8_t> roce_tos;              // 0..255
  std::optional<uint8_t> traffic_class;         // 0..255
  bool strict = false;
  bool empty() const {
    return !trust && pfc.empty() && dscp_to_priority.empty() && ecn.empty() && !roce_tos &&
           !traffic_class;
  }
};

// The `qos` value of a netconf: an object with trust ("dscp" | "pcp"), pfc and ecn (arrays of
// priorities 0..7, duplicates dropped, order kept), dscpToPriority ({"<dscp 0..63>": <0..7>}),
// roceTos and trafficClass (0..255), strict (bool); unknown keys are ignored. kInvalidArgument
// naming the first wrong field by its path, `path` being the block's own (json_reader.h's style:
// "$.qos.pfc: not a list (object)", "$.qos.trust: must be \"dscp\" or \"pcp\", not \"x\"").
StatusOr<QosPolicy> ParseQosPolicy(const nlohmann::json& qos, std::string_view path = "$.qos");

}  // namespace rdmak8s
