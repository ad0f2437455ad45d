#include "node/device_tracker.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>

#include "node/selectors.h"
#include "rdmak8s/device/port_state.h"

namespace rdmak8s::node {

namespace {

namespace fs = std::filesystem;

// The bus device a device sits on, as sysfs names it: bus/pci/devices/<pci_addr> for a PCI
// function, bus/auxiliary/devices/<aux_name> for an auxiliary device (an SF). Empty for soft
// devices.
std::string BusDevicePath(const std::string& sysfs_root, const RdmaDevice& dev) {
  if (dev.parent.kind == ParentKind::kPci && !dev.pci_address().empty()) {
    return sysfs_root + "/bus/pci/devices/" + dev.pci_address();
  }
  if (dev.parent.kind == ParentKind::kAuxiliary && !dev.parent.aux_name.empty()) {
    return sysfs_root + "/bus/auxiliary/devices/" + dev.parent.aux_name;
  }
  return "";
}

std::string_view PresenceName(Presence p) {
  switch (p) {
    case Presence::kPresent: return "present";
    case Presence::kInPod: return "in a pod";
    case Presence::kGone: return "gone";
  }
  return "?";
}

}  // namespace

DeviceTracker::DeviceTracker(Discovery* discovery, std::string sysfs_root)
    : discovery_(discovery), sysfs_root_(std::move(sysfs_root)) {}

DeviceHealth DeviceTracker::Evaluate(const RdmaDevice& dev) const {
  NetdevUpFn up = [this](std::string_view n) { return ReadNetdevUp(sysfs_root_, n); };
  return EvaluateHealth(dev, up);
}

void DeviceTracker::Found(RdmaDevice dev) {
  DeviceHealth h = Evaluate(dev);
  auto it = known_.find(dev.name);
  if (it == known_.end()) {
    SPDLOG_INFO("found {} ({}, {})", dev.name, TransportName(dev.transport),
                h.healthy ? "healthy" : h.reason);
  } else if (it->second.presence != Presence::kPresent) {
    SPDLOG_INFO("{} is back on the node (was {}): {}", dev.name, PresenceName(it->second.presence),
                h.healthy ? "healthy" : "unhealthy: " + h.reason);
  } else if (it->second.health != h) {
    SPDLOG_INFO("{} is now {}", dev.name, h.healthy ? "healthy" : "unhealthy: " + h.reason);
  }
  const std::string name = dev.name;  // `a = b` evaluates b (the move) first
  known_[name] = TrackedDevice{std::move(dev), h, Presence::kPresent};
}

bool DeviceTracker::JudgeAbsent(const std::string& name, TrackedDevice& t,
                                const std::set<std::string>& before) {
  const std::string bus = BusDevicePath(sysfs_root_, t.dev);
  if (!bus.empty()) {
    std::error_code ec;
    if (!fs::exists(bus, ec)) {  // follows the bus link: a dangling one is gone too
      if (t.presence != Presence::kGone || t.health.healthy) {
        SPDLOG_WARN("{} disappeared with its bus device {}", name, bus);
      }
      t.presence = Presence::kGone;
      t.health = {false, "bus device " + t.dev.bus_device_id() + " gone"};
      return true;
    }
    fs::path drv = fs::read_symlink(bus + "/driver", ec);
    std::string driver = ec ? "" : drv.filename().string();
    if (driver != t.dev.driver) {
      SPDLOG_INFO("forgetting {}: its bus device {} is now {}", name, t.dev.bus_device_id(),
                  driver.empty() ? "unbound" : "bound to " + driver);
      return false;
    }
    // The kernel hides a moved device here too; anything listed is another RDMA device.
    for (const auto& e : fs::directory_iterator(bus + "/infiniband", ec)) {
      std::string other = e.path().filename().string();
      if (other == name) continue;
      auto sib = known_.find(other);
      bool sibling = before.count(other) && sib != known_.end() && sib->second.dev.bus_device_id() == t.dev.bus_device_id();
      if (!sibling) {
        SPDLOG_INFO("forgetting {}: its bus device {} now carries {}", name, t.dev.bus_device_id(), other);
        return false;
      }
    }
  }
  if (t.presence == Presence::kGone) return true;  // an unregistered device stays gone
  if (t.presence == Presence::kPresent) {
    SPDLOG_INFO("{} no longer shown on the node, {}: taken as moved into a pod's network namespace",
                name, bus.empty() ? "a soft device" : "its bus device " + t.dev.bus_device_id() + " stays");
    t.presence = Presence::kInPod;
  }
  // What the node still shows of it (a netdev left on the node) can still make it unhealthy.
  DeviceHealth h = Evaluate(t.dev);
  if (h != t.health) {
    SPDLOG_INFO("{} (in a pod) is now {}", name, h.healthy ? "healthy" : "unhealthy: " + h.reason);
  }
  t.health = h;
  return true;
}

Status DeviceTracker::Rescan() {
  auto result = discovery_->DiscoverAll();
  // Keep what we knew: an unreadable sysfs is not "no devices".
  if (!result.ok()) return result.status().Prepend("discovery");
  const std::set<std::string> before = KnownNames();
  std::set<std::string> shown;
  for (auto& dev : result->devices) {
    shown.insert(dev.name);
    Found(std::move(dev));
  }
  for (const auto& f : result->failures) {
    shown.insert(f.rdma_dev);
    SPDLOG_WARN("discovery of {}: {}", f.rdma_dev, f.status.message());
    auto it = known_.find(f.rdma_dev);
    if (it != known_.end()) {
      it->second.presence = Presence::kPresent;
      it->second.health = {false, "unreadable: " + f.status.message()};
    }
  }
  for (auto it = known_.begin(); it != known_.end();) {
    if (!shown.count(it->first) && !JudgeAbsent(it->first, it->second, before)) {
      it = known_.erase(it);
    } else {
      ++it;
    }
  }
  return Status::Ok();
}

void DeviceTracker::Refresh(const std::string& rdma_dev) {
  auto dev = discovery_->DiscoverOne(rdma_dev);
  if (dev.ok()) {
    Found(std::move(dev).value());
    return;
  }
  auto it = known_.find(rdma_dev);
  if (it == known_.end()) {
    if (dev.status().code() != StatusCode::kNotFound) {
      SPDLOG_ERROR("re-read {}: {}", rdma_dev, dev.status().message());
    }
    return;
  }
  if (dev.status().code() == StatusCode::kNotFound) {
    const std::set<std::string> before = KnownNames();
    if (!JudgeAbsent(rdma_dev, it->second, before)) known_.erase(it);
    return;
  }
  SPDLOG_ERROR("re-read {}: {}", rdma_dev, dev.status().message());
  it->second.health = {false, "unreadable: " + dev.status().message()};
}

void DeviceTracker::Unregistered(const std::string& rdma_dev) {
  auto dev = discovery_->DiscoverOne(rdma_dev);
  if (dev.ok() || dev.status().code() != StatusCode::kNotFound) {
    Refresh(rdma_dev);
    return;
  }
  auto it = known_.find(rdma_dev);
  if (it == known_.end()) return;
  // The node also gets a "remove" uevent when a device is moved into a pod's netns (seen on the
  // 7.3 kernel with rxe). A device none of whose netdevs is on the node any more went with them
  // into a pod (host-device/sriov moved the netdev first): judged as a vanished device is.
  // One whose netdev is still here was really removed.
  const RdmaDevice& d = it->second.dev;
  std::vector<std::string> netdevs = d.netdevs;
  if (d.parent.lower_netdev.size()) netdevs.push_back(d.parent.lower_netdev);
  bool netdev_here = std::any_of(netdevs.begin(), netdevs.end(), [&](const std::string& n) {
    struct stat st {};
    return lstat((sysfs_root_ + "/class/net/" + n).c_str(), &st) == 0;
  });
  if (!netdevs.empty() && !netdev_here && it->second.presence != Presence::kGone) {
    const std::set<std::string> before = KnownNames();
    if (!JudgeAbsent(rdma_dev, it->second, before)) known_.erase(it);
    return;
  }
  if (it->second.presence != Presence::kGone) SPDLOG_WARN("{} unregistered", rdma_dev);
  it->second.presence = Presence::kGone;
  it->second.health = {false, "device gone"};
  const std::set<std::string> before = KnownNames();
  if (!JudgeAbsent(rdma_dev, it->second, before)) known_.erase(it);
}

Status DeviceTracker::RefreshPorts(const std::string& rdma_dev) {
  auto it = known_.find(rdma_dev);
  if (it == known_.end()) return NotFoundError("re-read ports of " + rdma_dev + ": not tracked");
  if (it->second.presence != Presence::kPresent) {
    return NotFoundError("re-read ports of " + rdma_dev + ": not on the node");
  }
  RdmaDevice dev = it->second.dev;
  for (auto& port : dev.ports) {
    RDMAK8S_ASSIGN_OR_RETURN(PortLinkState ls, ReadPortLinkState(sysfs_root_, rdma_dev, port.port_num));
    port.state = ls.state;
    port.phys_state = ls.phys_state;
    port.phys_state_name = std::move(ls.phys_state_name);
  }
  DeviceHealth h = Evaluate(dev);
  if (it->second.health != h) {
    SPDLOG_INFO("{} is now {}", rdma_dev, h.healthy ? "healthy" : "unhealthy: " + h.reason);
  }
  it->second = TrackedDevice{std::move(dev), h, Presence::kPresent};
  return Status::Ok();
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

std::vector<std::string> DeviceTracker::RdmaDevicesOfNetdev(std::string_view netdev) const {
  std::set<std::string> out;
  std::vector<std::string> todo{std::string(netdev)};
  std::set<std::string> seen;
  // Stacks are shallow (macvlan on a VLAN on a PF); the bound only guards against odd trees.
  for (size_t i = 0; i < todo.size() && i < 16; ++i) {
    const std::string& n = todo[i];
    if (!seen.insert(n).second) continue;
    std::error_code ec;
    const std::string dir = sysfs_root_ + "/class/net/" + n;
    for (const auto& e : fs::directory_iterator(dir + "/device/infiniband", ec)) {
      out.insert(e.path().filename().string());
    }
    for (const auto& t : DevicesOnNetdev(n)) out.insert(t);
    ec.clear();
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string entry = e.path().filename().string();
      if (entry.rfind("lower_", 0) == 0) todo.push_back(entry.substr(6));
    }
  }
  return {out.begin(), out.end()};
}

std::set<std::string> DeviceTracker::KnownNames() const {
  std::set<std::string> out;
  for (const auto& [name, t] : known_) out.insert(name);
  return out;
}

std::vector<std::string> DeviceTracker::Present() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : known_) {
    if (t.presence == Presence::kPresent) out.push_back(name);
  }
  return out;
}

}  // namespace rdmak8s::node
