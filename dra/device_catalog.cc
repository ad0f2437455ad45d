#include "dra/device_catalog.h"

#include <ctime>

namespace rdmak8s::dra {

DeviceCatalog::DeviceCatalog(std::string pool, WallClock now, int shares)
    : pool_(std::move(pool)),
      now_(now ? std::move(now) : WallClock([] { return static_cast<int64_t>(std::time(nullptr)); })),
      shares_(shares) {}

void DeviceCatalog::Update(const std::map<std::string, node::TrackedDevice>& tracked) {
  std::vector<std::string> present;
  for (const auto& [name, t] : tracked) {
    if (t.presence != node::Presence::kGone) present.push_back(name);
  }
  DraDeviceNames names(present, shares_);
  std::map<std::string, CatalogDevice> next;
  for (const auto& [name, t] : tracked) {
    std::string device = names.Name(name);
    if (t.presence == node::Presence::kGone || device.empty()) continue;
    CatalogDevice d{pool_, device, std::nullopt, t.dev, t.health, t.presence, 0};
    next[d.device] = std::move(d);
  }
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = next.size() != devices_.size();
  int64_t now = now_();
  for (auto& [name, d] : next) {
    auto it = devices_.find(name);
    if (it == devices_.end() || it->second.health != d.health) {
      d.last_updated = now;
      changed = true;
    } else {
      d.last_updated = it->second.last_updated;
      changed = changed || it->second.dev.name != d.dev.name || it->second.presence != d.presence;
    }
  }
  devices_ = std::move(next);
  names_ = std::move(names);
  if (changed) {
    ++generation_;
    cv_.notify_all();
  }
}

std::optional<CatalogDevice> DeviceCatalog::Find(const std::string& pool,
                                                 const std::string& device) const {
  if (pool != pool_) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<DraDeviceRef> ref = names_.Resolve(device);
  if (!ref) return std::nullopt;
  auto it = devices_.find(names_.Name(ref->rdma_dev));
  if (it == devices_.end()) return std::nullopt;
  CatalogDevice out = it->second;
  out.share = ref->share;
  return out;
}

std::vector<CatalogDevice> DeviceCatalog::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CatalogDevice> out;
  for (const auto& [name, d] : devices_) out.push_back(d);
  return out;
}

uint64_t DeviceCatalog::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

uint64_t DeviceCatalog::WaitForChange(uint64_t seen,
                                      std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return generation_ != seen || shut_down_; });
  return generation_;
}

void DeviceCatalog::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shut_down_ = true;
  cv_.notify_all();
}

bool DeviceCatalog::shut_down() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shut_down_;
}

}  // namespace rdmak8s::dra
