// The InfiniBand checks of one device: every port ACTIVE, a subnet manager answered (sm_lid set),
// the PKeys the policy's netconfs name are in the port's table; uverbs, rdma_cm and umad present.
#pragma once

#include "check_env.h"
#include "check_policy.h"
#include "check_result.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::inspect {

void CheckIbDevice(const RdmaDevice& dev, const CheckPolicy& policy, const CheckEnv& env,
                   CheckReport& report);

}  // namespace rdmak8s::inspect
