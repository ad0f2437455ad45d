// Checks every transport shares: a port is usable, and the device's character devices exist in
// /dev as the char devices sysfs says they are (major:minor).
#pragma once

#include <string>

#include "check_env.h"
#include "check_result.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::inspect {

// "mlx5_0 port 1"
std::string PortSubject(const RdmaDevice& dev, const Port& port);

// The port is usable by the one rule (rdmak8s/device/port_usable.h): ACTIVE (ports/<n>/state),
// LinkUp (ports/<n>/phys_state) and, for RoCE/iWARP, its netdev up
// (<sysfs_root>/class/net/<netdev>/operstate; unreadable counts as up). `fix` is what to do when
// it is not ACTIVE (transport specific: a subnet manager for IB, the link for Ethernet); a port
// ACTIVE but not LinkUp or with its netdev down gets a fix that names that.
void CheckPortActive(const RdmaDevice& dev, const Port& port, const std::string& fix,
                     const CheckEnv& env, CheckReport& report);

// uverbs, rdma_cm, and umad of every port when `want_umad` (IB): each listed by sysfs (else the
// kernel module that creates it is missing) and present at <dev_root>/infiniband/<name> as a char
// device with the major:minor sysfs shows.
void CheckCharDevices(const RdmaDevice& dev, bool want_umad, const CheckEnv& env,
                      CheckReport& report);

// `kind` among dev's char devices and present in /dev: empty when fine, else what is wrong.
std::string CharDeviceProblem(const RdmaDevice& dev, CharDeviceKind kind, uint32_t port_num,
                              const CheckEnv& env);

}  // namespace rdmak8s::inspect
