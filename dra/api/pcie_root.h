// The PCIe root complex of a PCI function, as the standard attribute
// resource.kubernetes.io/pcieRoot names it: "pci<domain>:<bus>", the host bridge directory the
// kernel creates (drivers/pci/probe.c, "pci%04x:%02x") and under which the function's sysfs
// object sits: <sysfs_root>/bus/pci/devices/<bdf> -> ../../../devices/pci0000:5d/.../<bdf>.
// The same derivation as upstream's deviceattribute helper, over any sysfs root (fixtures).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dra/api/slice_devices.h"
#include "rdmak8s/device.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dra {

// Whether `name` is a host bridge directory name: "pci" + 4+ hex digits + ':' + 2 hex digits.
bool IsPcieRootName(std::string_view name);

// The root of `pci_addr`. NotFound when the function is not in sysfs; InvalidArgument when its
// sysfs path has no host bridge component (the error names the resolved path).
StatusOr<std::string> PcieRootOf(const std::string& sysfs_root, std::string_view pci_addr);

// The publisher's input for discovered devices, all healthy (the caller marks the unhealthy
// ones): each with the PCIe root of its PCI function (an SF's owning function). A root that
// cannot be read is left empty and said in *notes (never a reason to hide the device).
std::vector<DeviceInput> DeviceInputsWithPcieRoots(const std::vector<RdmaDevice>& devices,
                                                   const std::string& sysfs_root,
                                                   std::vector<std::string>* notes);

}  // namespace rdmak8s::dra
