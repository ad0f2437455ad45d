// Whether the pod of an ADD was given the RDMA device its netconf's deviceID names. A NAD is
// tenant input: without this check a tenant's deviceID could name a device another tenant's pod
// holds, and the plugin (root) would move it into the wrong pod and apply its QoS (issue 32).
// docs/trust.md: deviceID says "which device, of those the pod was given".
//
// The pod was given a device when
//   - one of its own DRA claims holds it: the DRA driver's records of the pod (K8S_POD_UID, in
//     the node's podDevicesDir; rdmak8s/records/pod_devices.h), each of a claim of
//     K8S_POD_NAMESPACE (cni/dra_device.h, DraClaimHolding), or
//   - kubelet allocated it to the pod: kubelet's pod-resources API (the node's
//     podResourcesSocket; cni/pod_resources_client.h) lists, for K8S_POD_NAMESPACE/K8S_POD_NAME,
//     a device ID that is the deviceID itself or names the same RDMA device (an exclusive pool's
//     bus device or RDMA device name, a shared pool's "<rdma_dev>-<k>", an SR-IOV VF's PCI
//     address: rdmak8s/device/device_id.h).
// The records are read first: on a DRA node kubelet is not asked for a claim's device.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "cni/failure_code.h"
#include "cni/log.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::cni {

struct GrantQuery {
  std::string cni_args;              // CNI_ARGS: K8S_POD_UID, K8S_POD_NAMESPACE, K8S_POD_NAME
  std::string device_id;             // the netconf's deviceID
  std::string rdma_dev;              // the RDMA device it resolved to
  std::string pod_devices_dir;       // the node's DRA records dir
  std::string pod_resources_socket;  // the node's kubelet pod-resources socket
  std::chrono::milliseconds timeout{10000};  // the kubelet call's deadline
  // An ID kubelet lists to its RDMA device, as a deviceID resolves (where rdma_dev shows); an
  // error when it names none.
  std::function<StatusOr<std::string>(const std::string&)> resolve_id;
};

// Ok when the pod was given `q.rdma_dev` (logged with where from). Otherwise an error naming the
// deviceID, the device and the pod, recorded on `failure`: 100 when the pod was not given it,
// when its DRA records can't be read or trusted (or one is of another namespace's claim), and
// when CNI_ARGS names the pod too little to ask kubelet; 11 when kubelet does not answer
// (no socket, nothing serving, the deadline passed: a restarting kubelet), 100 when its answer
// is refused. CNI_ARGS without any K8S_POD_* key is no Kubernetes pod's (a runtime the node's
// admin drives directly, with no kubelet): the deviceID is taken as given, and the log says so.
Status CheckPodWasGiven(const GrantQuery& q, Logger& log, FailureCode& failure);

}  // namespace rdmak8s::cni
