// The KEP-4680 device-health service (dra-health v1alpha1 DRAResourceHealth): kubelet opens
// NodeWatchResources once per plugin and keeps it; we send every device of the DeviceCatalog
// at once, then again on each change of the catalog (the health the device plugin's tracker
// decides: port state, netdev state, device gone). A device that left the catalog is simply
// missing from the next message (kubelet then takes it as Unknown). The stream ends when the
// client cancels, the catalog is shut down or the server's owner sets `stopping` (the plugin
// stops serving while the driver, and its catalog, live on).
#pragma once

#include <atomic>
#include <memory>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "dra-health/v1alpha1/api.pb.h"
#include "dra/device_catalog.h"

namespace rdmak8s::dra {

// The message for `devices`: HEALTHY / UNHEALTHY from each device's health. Pure.
v1alpha1::NodeWatchResourcesResponse ToHealthMessage(const std::vector<CatalogDevice>& devices);

// `catalog` and `stopping` are not owned and must outlive the service.
std::unique_ptr<grpc::Service> NewHealthService(const DeviceCatalog* catalog,
                                                const std::atomic<bool>* stopping);

}  // namespace rdmak8s::dra
