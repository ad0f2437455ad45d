// The CDI spec of one prepared claim (CDI spec 0.5.0), which the runtime reads to give the
// pod's containers their devices: kind "<driver>/claim"; one CDI device per allocated device,
// named "<claim_uid>-<device>" so that two claims sharing a device never define the same CDI
// name; the device's char devices by transport (node::CharDevicesFor: uverbs and rdma_cm always,
// umad for IB, issm only with the "issm" option, umad on RoCE only with "roceUmad") and the env
// of its request (node::AllocationEnv over every device of that request: ncclEnv, ucxEnv, env),
// options coming from the claim's opaque config. One file per claim and driver,
// <cdi_dir>/<driver>-claim_<claim_uid>.json: one claim may hold devices of two drivers (two
// instances of this one under two --driver-name), each writing its own spec (the CDI kind
// "<driver>/claim" keeps their device names apart too). Pure.
#pragma once

#include <string>
#include <vector>

#include "node/allocate.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::dra {

struct ClaimDevice {
  std::string request;
  std::string device;  // DRA device name
  RdmaDevice dev;
  node::AllocateOptions options;  // of its request
};

std::string ClaimCdiKind(const std::string& driver);
// "<driver>/claim=<claim_uid>-<device>", what kubelet hands the runtime.
std::string ClaimCdiDeviceId(const std::string& driver, const std::string& claim_uid,
                             const std::string& device);
std::string ClaimCdiSpecPath(const std::string& cdi_dir, const std::string& driver,
                             const std::string& claim_uid);
// The spec document (JSON text) for `devices` of claim `claim_uid`; host paths under
// `dev_root`.
std::string BuildClaimCdiSpec(const std::string& driver, const std::string& claim_uid,
                              const std::vector<ClaimDevice>& devices, const std::string& dev_root);

}  // namespace rdmak8s::dra
