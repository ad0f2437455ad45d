// NodeSysfs: changes a copied fixture tree (the node's /sys) the way the kernel changes it, for
// the device plugin's tracking tests. Above all what the kernel HIDES: in RDMA netns mode
// exclusive, a device moved into a pod's network namespace vanishes from the node's
// class/infiniband and from its bus device's infiniband/ directory (both netns-tagged), and a VF
// netdev moved along with it vanishes from class/net and the bus device's net/. The hidden
// directories are kept outside the tree (the pod's view) and put back on ComeHome.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

namespace rdmak8s::testing {

class NodeSysfs {
 public:
  // `sys`: the node's tree; `pod`: where the hidden directories go (created as needed).
  NodeSysfs(std::string sys, std::string pod) : sys_(std::move(sys)), pod_(std::move(pod)) {}

  // Moves RDMA device `rdma_dev` (and these netdevs) into the pod: hidden from the node.
  // False when something is not where a kernel-shaped tree has it.
  bool MoveToPod(const std::string& rdma_dev, const std::vector<std::string>& netdevs = {}) {
    return Hide("class/infiniband/" + rdma_dev) && [&] {
      for (const auto& n : netdevs) {
        if (!Hide("class/net/" + n)) return false;
      }
      return true;
    }();
  }
  // Back on the node, as `rdma dev set <dev> netns 1` (and the netdevs' move) do.
  bool ComeHome(const std::string& rdma_dev, const std::vector<std::string>& netdevs = {}) {
    bool ok = Show("class/infiniband/" + rdma_dev);
    for (const auto& n : netdevs) ok = Show("class/net/" + n) && ok;
    return ok;
  }
  // The hidden directory of a class entry (the pod's view of it), e.g. to change a port state
  // while the device is in the pod.
  std::string InPod(const std::string& class_rel) const { return pod_ + "/" + Key(class_rel); }

  // The bus device disappears (hot-unplug, VF destroyed): its bus link and its directory.
  bool RemoveBusDevice(const std::string& bus_rel) {
    std::error_code ec;
    std::filesystem::path link = sys_ + "/" + bus_rel;
    std::filesystem::path real = std::filesystem::canonical(link, ec);
    if (ec) return false;
    std::filesystem::remove_all(real, ec);
    if (ec) return false;
    return std::filesystem::remove(link, ec);
  }
  // The bus device is bound to `driver` (bus/pci/drivers/<driver>), as after a rebind.
  bool Rebind(const std::string& pci_addr, const std::string& driver) {
    std::error_code ec;
    std::filesystem::path dev = std::filesystem::canonical(sys_ + "/bus/pci/devices/" + pci_addr, ec);
    if (ec) return false;
    std::filesystem::create_directories(sys_ + "/bus/pci/drivers/" + driver, ec);
    std::filesystem::remove(dev / "driver", ec);
    std::filesystem::path rel =
        std::filesystem::path(sys_ + "/bus/pci/drivers/" + driver).lexically_relative(dev);
    std::filesystem::create_directory_symlink(rel, dev / "driver", ec);
    return !ec;
  }

 private:
  static std::string Key(const std::string& class_rel) {
    std::string k = class_rel;
    for (char& c : k) {
      if (c == '/') c = '_';
    }
    return k;
  }
  // A class entry is a relative symlink to the device's directory: both go.
  bool Hide(const std::string& class_rel) {
    std::error_code ec;
    std::filesystem::path link = sys_ + "/" + class_rel;
    std::filesystem::path target = std::filesystem::read_symlink(link, ec);
    if (ec) return false;
    std::filesystem::path real = (link.parent_path() / target).lexically_normal();
    std::filesystem::create_directories(pod_, ec);
    std::filesystem::rename(real, InPod(class_rel), ec);
    if (ec) return false;
    hidden_[class_rel] = {target, real};
    return std::filesystem::remove(link, ec);
  }
  bool Show(const std::string& class_rel) {
    auto it = hidden_.find(class_rel);
    if (it == hidden_.end()) return false;
    std::error_code ec;
    std::filesystem::rename(InPod(class_rel), it->second.real, ec);
    if (ec) return false;
    std::filesystem::create_directory_symlink(it->second.target, sys_ + "/" + class_rel, ec);
    hidden_.erase(it);
    return !ec;
  }

  struct Hidden {
    std::filesystem::path target;  // the class link's text
    std::filesystem::path real;    // the directory it named
  };
  std::string sys_;
  std::string pod_;
  std::map<std::string, Hidden> hidden_;
};

}  // namespace rdmak8s::testing
