// Discovery's PCI function reader: IDs, NUMA node, SR-IOV (PF counts; a VF's PF and VF index,
// through the per-call VF cache) and the PCIe path. Internal to rdmak8s_common.
#pragma once

#include <string>

#include "discovery/discovery_context.h"
#include "device/sysfs.h"

namespace rdmak8s::internal::discovery {

// The PCI function at `pci_dir` (already open as `dir`): bus/pci/devices/<bdf>/{vendor,device,
// subsystem_*,numa_node,physfn,virtfn<N>,sriov_*}. Thread safe on one ctx (the VF cache is
// guarded by ctx.vf_mu).
StatusOr<PciInfo> ReadPci(Context& ctx, const std::string& pci_dir, const SysfsDir& dir);

}  // namespace rdmak8s::internal::discovery
