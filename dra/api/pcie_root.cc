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

}  // namespace rdmak8s::dra
