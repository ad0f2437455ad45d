// The PF netdev rule (rdmak8s/device/pf_netdev.h).
#include "rdmak8s/device/pf_netdev.h"

#include <unistd.h>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/device/device_id.h"
#include "rdmak8s/device/sysfs_attr.h"

namespace rdmak8s {

StatusOr<std::string> PfNetdevAt(const std::string& root, const std::string& bus_rel,
                                 const std::string& lower_netdev, const std::string& rdma_dev) {
  if (bus_rel.empty()) {
    if (!lower_netdev.empty()) return lower_netdev;
    return NotFoundError("RDMA device " + rdma_dev + " has neither a bus device nor a parent netdev");
  }
  auto exists = [&](const std::string& rel) { return access((root + "/" + rel).c_str(), F_OK) == 0; };
  std::string pci = bus_rel;
  // An auxiliary device (SF) sits under the PCI function that owns it.
  if (!exists(pci + "/net") || !IsPciAddress(Basename(pci))) {
    if (!exists(pci + "/physfn")) pci = Dirname(pci);
  }
  if (std::string pf = ResolveInSysfsTree(root, pci + "/physfn"); !pf.empty()) pci = pf;
  StatusOr<std::vector<std::string>> nets = ListSysfsDir(root + "/" + pci + "/net");
  if (!nets.ok()) return nets.status().Prepend("netdev of the PF of " + rdma_dev);
  if (nets->empty()) return NotFoundError("PF " + Basename(pci) + " of " + rdma_dev + " has no netdev");
  return (*nets)[0];
}

}  // namespace rdmak8s
