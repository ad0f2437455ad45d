#include "dra/api/slice_sync.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "dra/api/pcie_root.h"

namespace rdmak8s::dra {

std::vector<DeviceInput> CatalogDeviceInputs(const std::vector<CatalogDevice>& devices,
                                             const std::string& sysfs_root,
                                             std::vector<std::string>* notes) {
  std::vector<RdmaDevice> rdma;
  rdma.reserve(devices.size());
  for (const auto& d : devices) rdma.push_back(d.dev);
  std::vector<DeviceInput> out = DeviceInputsWithPcieRoots(rdma, sysfs_root, notes);
  for (size_t i = 0; i < out.size() && i < devices.size(); ++i) {
    out[i].healthy = devices[i].health.healthy;
    out[i].unhealthy_reason = devices[i].health.reason;
  }
  return out;
}

SliceSync::SliceSync(SlicePublisher* publisher, const DeviceCatalog* catalog, SliceSyncOptions options)
    : publisher_(publisher), catalog_(catalog), options_(std::move(options)) {}

void SliceSync::SleepUntil(std::chrono::steady_clock::time_point deadline) const {
  uint64_t seen = catalog_->generation();
  while (!catalog_->shut_down() && std::chrono::steady_clock::now() < deadline) {
    seen = catalog_->WaitForChange(seen, deadline);
  }
}

void SliceSync::Run() {
  std::chrono::milliseconds backoff = options_.initial_backoff;
  // Not a generation the catalog can have yet: the first pass always publishes.
  uint64_t published = 0;
  bool first = true;
  while (!catalog_->shut_down()) {
    uint64_t generation = catalog_->generation();
    if (!first && generation == published) {
      catalog_->WaitForChange(published, std::chrono::steady_clock::now() + std::chrono::hours(24));
      continue;
    }
    std::vector<std::string> notes;
    std::vector<DeviceInput> inputs =
        CatalogDeviceInputs(catalog_->All(), options_.sysfs_root, &notes);
    Status s = publisher_->Publish(inputs);
    if (options_.on_publish) options_.on_publish(s);
    if (!s.ok()) {
      SPDLOG_ERROR("publish ResourceSlices: {} (retrying in {} ms)", s.message(), backoff.count());
      SleepUntil(std::chrono::steady_clock::now() + backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    for (const auto& n : notes) SPDLOG_WARN("ResourceSlices: {}", n);
    for (const auto& n : publisher_->last_notes()) SPDLOG_WARN("ResourceSlices: {}", n);
    first = false;
    published = generation;
    backoff = options_.initial_backoff;
    published_generation_ = generation;
    ++publishes_;
    SPDLOG_DEBUG("published ResourceSlices for catalog generation {} ({} devices)", generation,
                 inputs.size());
  }
}

}  // namespace rdmak8s::dra
