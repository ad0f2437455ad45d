// CheckPodWasGiven (cni/pod_grant.h): the pod's DRA records, then kubelet's pod-resources answer.
#include "cni/pod_grant.h"

#include "cni/dra_device.h"
#include "cni/pod_resources_client.h"
#include "cni/spec.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/records/pod_devices.h"

namespace rdmak8s::cni {

namespace {

// A K8S_POD_* value of CNI_ARGS: set, absent, or an error (two different values).
struct Arg {
  StatusOr<std::string> value;
  bool set() const { return value.ok(); }
  bool absent() const { return value.status().code() == StatusCode::kNotFound; }
};

// The IDs shown in an error: the first few, then how many more.
std::string ShownIds(const std::vector<std::string>& ids) {
  constexpr size_t kShown = 8;
  std::vector<std::string> shown;
  for (size_t i = 0; i < ids.size() && i < kShown; ++i) shown.push_back(Quoted(ids[i], 64));
  std::string out = "[" + Join(shown) + "]";
  if (ids.size() > kShown) out += " and " + std::to_string(ids.size() - kShown) + " more";
  return out;
}

}  // namespace

Status CheckPodWasGiven(const GrantQuery& q, Logger& log, FailureCode& failure) {
  const Arg uid{CniArg(q.cni_args, "K8S_POD_UID")};
  const Arg ns{CniArg(q.cni_args, "K8S_POD_NAMESPACE")};
  const Arg name{CniArg(q.cni_args, "K8S_POD_NAME")};
  const std::string what = "deviceID " + Quoted(q.device_id, 64) +
                           (q.device_id == q.rdma_dev ? "" : " (RDMA device " + q.rdma_dev + ")");
  if (uid.absent() && ns.absent() && name.absent()) {
    log.Info(what + ": CNI_ARGS names no Kubernetes pod (no K8S_POD_UID, K8S_POD_NAMESPACE or "
                    "K8S_POD_NAME): taken as the runtime's, unchecked");
    return Status::Ok();
  }
  for (const Arg* a : {&uid, &ns, &name}) {
    if (!a->set() && !a->absent()) return failure.Fail(kErrDeviceNotFound, a->value.status().Prepend(what));
  }
  const std::string pod = "pod " + (ns.set() ? *ns.value : "?") + "/" + (name.set() ? *name.value : "?") +
                          (uid.set() ? " (uid " + *uid.value + ")" : "");

  // The pod's own DRA claims.
  if (uid.set()) {
    auto records = ReadPodClaimRecords(q.pod_devices_dir, *uid.value);
    if (!records.ok() && records.status().code() != StatusCode::kNotFound) {
      return failure.Fail(kErrDeviceNotFound, records.status().Prepend(what + ": DRA records of " + pod));
    }
    if (records.ok()) {
      auto held = DraClaimHolding(*records, *uid.value, ns.set() ? *ns.value : "", q.rdma_dev);
      if (!held.ok()) return failure.Fail(kErrDeviceNotFound, held.status().Prepend(what));
      if (*held) {
        log.Info(what + ": of DRA claim " + (*held)->claim + ", request " + (*held)->request + " of " + pod);
        return Status::Ok();
      }
    }
  }

  // What kubelet allocated to the pod.
  if (!ns.set() || !name.set()) {
    return failure.Fail(kErrDeviceNotFound,
                        PermissionDeniedError(what + ": no DRA claim of " + pod + " holds it, and without "
                                              "K8S_POD_NAMESPACE and K8S_POD_NAME in CNI_ARGS kubelet "
                                              "cannot be asked which devices the pod was given"));
  }
  auto pods = ListPodResources(q.pod_resources_socket, q.timeout);
  if (!pods.ok()) {
    const StatusCode c = pods.status().code();
    const bool later = c == StatusCode::kNotFound || c == StatusCode::kUnavailable ||
                       c == StatusCode::kDeadlineExceeded;
    return failure.Fail(later ? kErrTryAgainLater : kErrDeviceNotFound,
                        pods.status().Prepend(what + ": which devices was " + pod + " given? (no DRA "
                                              "claim of the pod holds it)"));
  }
  auto ids = PodDeviceIds(*pods, *ns.value, *name.value);
  if (!ids) {
    return failure.Fail(kErrDeviceNotFound,
                        PermissionDeniedError(what + " is not a device " + pod + " was given: no DRA "
                                              "claim of the pod holds it, and kubelet (" +
                                              q.pod_resources_socket + ") lists no device of the pod"));
  }
  for (const auto& id : *ids) {
    bool same = id == q.device_id;
    if (!same) {
      auto dev = q.resolve_id(id);
      same = dev.ok() && *dev == q.rdma_dev;
    }
    if (same) {
      log.Info(what + ": kubelet gave " + pod + " device ID " + Quoted(id, 64));
      return Status::Ok();
    }
  }
  return failure.Fail(kErrDeviceNotFound,
                      PermissionDeniedError(what + " is not a device " + pod + " was given: no DRA claim "
                                            "of the pod holds it, and kubelet (" + q.pod_resources_socket +
                                            ") lists for the pod only " + ShownIds(*ids)));
}

}  // namespace rdmak8s::cni
