// The node-wide RoCE QoS of one device, on its PF netdev (where DCB and ECN live): DCB trust, the
// DSCP -> priority entries the policy's ToS / traffic class use, PFC on exactly the priorities
// RoCE uses (plus qos.pfc and --allow-pfc), ECN on them where the driver exposes it.
//
// Reads through env's DCB netlink roles and sysfs (ECN through common's qos_setting.h, as the CNI
// reads it); each problem is one ✘ line, never an early return: the operator sees everything at
// once. The per-port RoCE checks are check_roce.h's.
#pragma once

#include <string>

#include "check_env.h"
#include "check_policy.h"
#include "check_result.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::inspect {

// Adds the lines of trust, the DSCP map, PFC and ECN of `dev` on its PF netdev `pf`, in that
// order (each step uses what the one before found: the trust in effect decides which priorities
// RoCE uses, those decide where PFC and ECN must be on).
void CheckDcb(const RdmaDevice& dev, const std::string& pf, const CheckPolicy& policy,
              const CheckEnv& env, CheckReport& report);

}  // namespace rdmak8s::inspect
