#include "dra/api/pcie_root.h"

#include <cctype>
#include <filesystem>
#include <system_error>

namespace rdmak8s::dra {

bool IsPcieRootName(std::string_view name) {
  if (name.size() < 10 || name.substr(0, 3) != "pci") return false;
  size_t colon = name.find(':');
  if (colon == std::string_view::npos || colon < 7 || name.size() - colon - 1 != 2) return false;
  for (size_t i = 3; i < name.size(); ++i) {
    if (i == colon) continue;
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  return true;
}

StatusOr<std::string> PcieRootOf(const std::string& sysfs_root, std::string_view pci_addr) {
  namespace fs = std::filesystem;
  const fs::path link = fs::path(sysfs_root) / "bus/pci/devices" / std::string(pci_addr);
  std::error_code ec;
  fs::path real = fs::canonical(link, ec);
  if (ec) return ErrnoError(ec.value(), "resolve " + link.string());
  fs::path root = fs::canonical(sysfs_root, ec);
  if (ec) return ErrnoError(ec.value(), "resolve " + sysfs_root);
  for (const auto& part : real.lexically_relative(root)) {
    if (IsPcieRootName(part.string())) return part.string();
  }
  return InvalidArgumentError("pcie root of " + std::string(pci_addr) + ": no pci<domain>:<bus> in " +
                              real.string());
}

std::vector<DeviceInput> DeviceInputsWithPcieRoots(const std::vector<RdmaDevice>& devices,
                                                   const std::string& sysfs_root,
                                                   std::vector<std::string>* notes) {
  std::vector<DeviceInput> out;
  out.reserve(devices.size());
  for (const RdmaDevice& d : devices) {
    DeviceInput in;
    in.device = d;
    if (!d.pci_address().empty()) {
      StatusOr<std::string> root = PcieRootOf(sysfs_root, d.pci_address());
      if (root.ok()) in.pcie_root = *root;
      else if (notes) notes->push_back(d.name + ": no pcieRoot attribute: " + root.status().message());
    }
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace rdmak8s::dra
