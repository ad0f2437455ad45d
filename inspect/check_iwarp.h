// The iWARP checks of one device: every port ACTIVE and rdma_cm present (iWARP connects only
// through it); PFC is said not to be needed (–), never checked: iWARP runs over TCP.
#pragma once

#include "check_env.h"
#include "check_result.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::inspect {

void CheckIwarpDevice(const RdmaDevice& dev, const CheckEnv& env, CheckReport& report);

}  // namespace rdmak8s::inspect
