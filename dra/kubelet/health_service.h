// The KEP-4680 device-health service (dra-health v1alpha1 DRAResourceHealth): kubelet opens
// NodeWatchResources once per plugin and keeps it. We send every device of the DeviceCatalog at
// once, again on each change of the catalog (the health the device plugin's tracker decides:
// port state, netdev state, device gone), and again every `resend_interval` whatever changed:
// kubelet (v1.36) shows a device Unknown once its entry's last_updated_time is older than the
// entry's health_check_timeout_seconds (its own default, 30 s, when 0), so each message carries
// the time it was decided (now: the catalog is kept current by events and rescans) and the
// timeout we announce. `message` says why a device is unhealthy ("port 1 state DOWN", "netdev
// eth0 down"); a device that left the catalog is sent UNHEALTHY "device gone" for the rest of
// the stream (kubelet would otherwise keep its last Healthy entry until it goes stale), until it
// comes back. The stream ends when the client cancels, the catalog is shut down or the server's
// owner sets `stopping` (the plugin stops serving while the driver, and its catalog, live on).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "dra-health/v1alpha1/api.pb.h"
#include "dra/device_catalog.h"

namespace rdmak8s::dra {

struct HealthStreamOptions {
  // Every device again at least this often. Must be well under `timeout_seconds`.
  std::chrono::milliseconds resend_interval{10000};
  // health_check_timeout_seconds of every entry: how long kubelet trusts it.
  int64_t timeout_seconds = 30;
  std::function<int64_t()> now;  // Unix seconds; null: the wall clock
};

// kubelet keeps at most this many characters of a message (longer ones it cuts itself).
inline constexpr size_t kMaxHealthMessage = 1024;

// The message for `devices` decided at `now` (Unix seconds), each entry announcing
// `timeout_seconds`; `gone` (DRA device name -> pool) are sent UNHEALTHY "device gone". Pure.
v1alpha1::NodeWatchResourcesResponse ToHealthMessage(const std::vector<CatalogDevice>& devices,
                                                     int64_t now, int64_t timeout_seconds,
                                                     const std::map<std::string, std::string>& gone = {});

// `catalog` and `stopping` are not owned and must outlive the service.
std::unique_ptr<grpc::Service> NewHealthService(const DeviceCatalog* catalog,
                                                const std::atomic<bool>* stopping,
                                                HealthStreamOptions options = {});

}  // namespace rdmak8s::dra
