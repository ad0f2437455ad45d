// Discovery's PCI function reader: IDs, NUMA, SR-IOV with the per-call VF cache, PCIe path.
#include "discovery/discovery_pci.h"

#include <filesystem>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::internal::discovery {

namespace fs = std::filesystem;
using internal::IsPciAddress;
using internal::ParseInt;
using internal::ParseUint;

// `dir` is `pci_dir`, already open.
StatusOr<PciInfo> ReadPci(Context& ctx, const std::string& pci_dir, const SysfsDir& dir) {
  const std::string& root = ctx.root;
  PciInfo pci;
  pci.address = Basename(pci_dir);
  auto hex16 = [&](const char* attr, bool required, uint16_t* out) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, dir.ReadOptional(attr));
    if (!text) {
      return required ? NotFoundError("read " + dir.PathOf(attr) + ": No such file or directory")
                      : Status::Ok();
    }
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(*text, dir.PathOf(attr)));
    *out = static_cast<uint16_t>(v);
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(hex16("vendor", true, &pci.vendor_id));
  RDMAK8S_RETURN_IF_ERROR(hex16("device", true, &pci.device_id));
  RDMAK8S_RETURN_IF_ERROR(hex16("subsystem_vendor", false, &pci.subsystem_vendor_id));
  RDMAK8S_RETURN_IF_ERROR(hex16("subsystem_device", false, &pci.subsystem_device_id));
  RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> numa, dir.ReadOptional("numa_node"));
  if (numa) {
    RDMAK8S_ASSIGN_OR_RETURN(int64_t n, ParseInt(*numa, dir.PathOf("numa_node")));
    pci.numa_node = static_cast<int>(n);
  }
  // VF: physfn -> ../<pf>; the VF index is N of the PF's virtfnN that points back at us.
  StatusOr<std::string> physfn = dir.ReadLink("physfn");
  if (physfn.ok()) {
    pci.is_vf = true;
    std::string pf_dir = ResolveLink(pci_dir, *physfn);
    pci.pf_address = Basename(pf_dir);
    std::optional<std::unordered_map<std::string, int>> vfs;
    {
      std::lock_guard<std::mutex> lock(*ctx.vf_mu);
      if (auto it = ctx.vf_index_by_pf.find(pf_dir); it != ctx.vf_index_by_pf.end()) vfs = it->second;
    }
    if (!vfs) {
      // Read outside the lock; two threads may both read one PF, which is harmless.
      vfs.emplace();
      RDMAK8S_ASSIGN_OR_RETURN(SysfsDir pf, SysfsDir::Open(pf_dir));
      RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names, pf.List());
      for (const std::string& n : names) {
        if (n.rfind("virtfn", 0) != 0) continue;
        RDMAK8S_ASSIGN_OR_RETURN(std::string target, pf.ReadLink(n));
        RDMAK8S_ASSIGN_OR_RETURN(uint64_t vf, ParseUint(n.substr(6), pf.PathOf(n)));
        (*vfs)[Basename(target)] = static_cast<int>(vf);
      }
      std::lock_guard<std::mutex> lock(*ctx.vf_mu);
      ctx.vf_index_by_pf.emplace(pf_dir, *vfs);
    }
    if (auto it = vfs->find(pci.address); it != vfs->end()) pci.vf_index = it->second;
  } else if (physfn.status().code() != StatusCode::kNotFound) {
    return physfn.status();
  } else {
    // Only a PF has SR-IOV attributes.
    for (const char* attr : {"sriov_totalvfs", "sriov_numvfs"}) {
      RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, dir.ReadOptional(attr));
      if (!text) continue;
      RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(*text, dir.PathOf(attr)));
      (attr[6] == 't' ? pci.sriov_totalvfs : pci.sriov_numvfs) = static_cast<int>(v);
    }
  }
  // PCIe path and root: the host bridge and BDF components of
  // devices/pci<dom>:<bus>/<root port>/.../<this function>, as the tree's links spell the path
  // (ResolveLink). A path that leaves devices/ names no root.
  std::string rel = fs::path(pci_dir).lexically_relative(fs::path(root) / "devices").string();
  const bool in_devices = !rel.empty() && rel.rfind("..", 0) != 0;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t slash = rel.find('/', start);
    std::string_view part = std::string_view(rel).substr(
        start, slash == std::string::npos ? std::string::npos : slash - start);
    if (IsPciAddress(part)) pci.pcie_path.emplace_back(part);
    if (in_devices && start == 0 && IsPcieRootName(part)) pci.pcie_root = part;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return pci;
}

}  // namespace rdmak8s::internal::discovery
