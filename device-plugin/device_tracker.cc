#include "device-plugin/device_tracker.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>

#include <spdlog/spdlog.h>

#include "device-plugin/pools.h"

namespace rdmak8s::dp {

namespace {
constexpr char kGone[] = "device gone";
}  // namespace

DeviceTracker::DeviceTracker(Discovery* discovery, std::string sysfs_root)
    : discovery_(discovery), sysfs_root_(std::move(sysfs_root)) {}

DeviceHealth DeviceTracker::Evaluate(const RdmaDevice& dev) const {
  NetdevUpFn up = [this](std::string_view n) { return ReadNetdevUp(sysfs_root_, n); };
  return EvaluateHealth(dev, up);
}

Status DeviceTracker::Rescan() {
  auto result = discovery_->DiscoverAll();
  // Keep what we knew: an unreadable sysfs is not "no devices".
  if (!result.ok()) return result.status().Prepend("discovery");
  std::set<std::string> present;
  for (auto& dev : result->devices) {
    present.insert(dev.name);
    DeviceHealth h = Evaluate(dev);
    auto it = known_.find(dev.name);
    if (it == known_.end()) {
      SPDLOG_INFO("found {} ({}, {})", dev.name, TransportKey(dev.transport),
                  h.healthy ? "healthy" : h.reason);
    } else if (it->second.health != h) {
      SPDLOG_INFO("{} is now {}", dev.name, h.healthy ? "healthy" : "unhealthy: " + h.reason);
    }
    const std::string name = dev.name;  // `a = b` evaluates b (the move) first
    known_[name] = TrackedDevice{std::move(dev), h};
  }
  for (const auto& f : result->failures) {
    present.insert(f.rdma_dev);
    SPDLOG_WARN("discovery of {}: {}", f.rdma_dev, f.status.message());
    auto it = known_.find(f.rdma_dev);
    if (it != known_.end()) it->second.health = {false, "unreadable: " + f.status.message()};
  }
  for (auto& [name, t] : known_) {
    if (!present.count(name) && t.health.reason != kGone) {
      SPDLOG_WARN("{} disappeared", name);
      t.health = {false, kGone};
    }
  }
  return Status::Ok();
}

void DeviceTracker::Refresh(const std::string& rdma_dev) {
  auto dev = discovery_->DiscoverOne(rdma_dev);
  if (!dev.ok()) {
    auto it = known_.find(rdma_dev);
    if (dev.status().code() == StatusCode::kNotFound) {
      if (it != known_.end() && it->second.health.reason != kGone) {
        SPDLOG_WARN("{} disappeared", rdma_dev);
        it->second.health = {false, kGone};
      }
    } else {
      SPDLOG_ERROR("re-read {}: {}", rdma_dev, dev.status().message());
      if (it != known_.end()) it->second.health = {false, "unreadable: " + dev.status().message()};
    }
    return;
  }
  DeviceHealth h = Evaluate(*dev);
  auto it = known_.find(rdma_dev);
  if (it == known_.end() || it->second.health != h) {
    SPDLOG_INFO("{} is now {}", rdma_dev, h.healthy ? "healthy" : "unhealthy: " + h.reason);
  }
  known_[rdma_dev] = TrackedDevice{std::move(dev).value(), h};
}

bool DeviceTracker::RefreshPorts(const std::string& rdma_dev) {
  auto it = known_.find(rdma_dev);
  if (it == known_.end() || it->second.health.reason == kGone) return false;
  RdmaDevice dev = it->second.dev;
  for (auto& port : dev.ports) {
    // ports/N/state is "4: ACTIVE", phys_state "5: LinkUp" (drivers/infiniband/core/sysfs.c).
    std::string base = sysfs_root_ + "/class/infiniband/" + rdma_dev + "/ports/" +
                       std::to_string(port.port_num) + "/";
    std::ifstream st(base + "state"), ph(base + "phys_state");
    std::string state_line, phys_line;
    if (!std::getline(st, state_line) || !std::getline(ph, phys_line)) return false;
    auto number = [](const std::string& line, int* out) {
      size_t colon = line.find(':');
      if (colon == std::string::npos || colon == 0) return false;
      for (size_t i = 0; i < colon; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(line[i]))) return false;
      }
      *out = std::stoi(line.substr(0, colon));
      return true;
    };
    int state = 0, phys = 0;
    if (!number(state_line, &state) || !number(phys_line, &phys) || state < 0 || state > 5) {
      return false;
    }
    port.state = static_cast<PortState>(state);
    port.phys_state = static_cast<uint32_t>(phys);
    size_t colon = phys_line.find(':');
    port.phys_state_name = phys_line.substr(std::min(phys_line.size(), colon + 2));
  }
  DeviceHealth h = Evaluate(dev);
  if (it->second.health != h) {
    SPDLOG_INFO("{} is now {}", rdma_dev, h.healthy ? "healthy" : "unhealthy: " + h.reason);
  }
  it->second = TrackedDevice{std::move(dev), h};
  return true;
}

std::vector<std::string> DeviceTracker::DevicesOnNetdev(std::string_view netdev) const {
  std::vector<std::string> out;
  for (const auto& [name, t] : known_) {
    if (std::find(t.dev.netdevs.begin(), t.dev.netdevs.end(), netdev) != t.dev.netdevs.end()) {
      out.push_back(name);
    }
  }
  return out;
}

std::vector<std::string> DeviceTracker::Present() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : known_) {
    if (t.health.reason != kGone) out.push_back(name);
  }
  return out;
}

}  // namespace rdmak8s::dp
