// From the device model (rdmak8s/device/device.h) to the devices this node's pool publishes: one
// device per RDMA function (PF, VF, SF, soft device), its attributes and, in shared mode, its
// capacity or shares; unhealthy devices tainted or withdrawn.
//
// Attribute names (unqualified ones are in the driver's domain, e.g. rdma.rdmak8s.io/transport):
//   resource.kubernetes.io/pcieRoot  "pci<domain>:<bus>" of the host bridge (PCI, SF)
//   resource.kubernetes.io/pciBusID  the PCI function ("0000:3b:00.2"; an SF's owning function)
//   resource.kubernetes.io/numaNode  the PCI function's NUMA node, when sysfs knows one
//   transport (ib|roce|iwarp|unknown), linkLayer, rdmaDevice, nodeType, function (pf|vf|sf|soft),
//   netdev (the first), netdevs (all, comma separated), pciAddress, vendorID, deviceID
//   ("0x15b3"), driver, rdmaDriver, pfAddress, pfName, vfIndex, auxDevice, lowerNetdev, ports,
//   activePorts, portState (ACTIVE when any port is), linkSpeed (port 1's rate text),
//   linkSpeedGbps (port 1's Port::rate_gbps, whole Gb/s), firmware, nodeGUID, roceV2; IB only: lid, smLid, pkeys (port 1's).
//   k8s.cni.cncf.io/deviceID      what Multus hands the delegate CNI: a PF's or VF's PCI address,
//                                 an SF's auxiliary device name, a soft device's rdma_dev
//   k8s.cni.cncf.io/resourceName  "<driver>/<transport>": a NAD's k8s.v1.cni.cncf.io/resourceName
// A value the API would reject (a string longer than 64) is left out and said in `notes`.
//
// An unhealthy device is tainted (<driver>/unhealthy=<reason>), but an InfiniBand device
// waiting for its subnet manager (AwaitsSubnetManager: no port ACTIVE, one INIT or ARMED) is
// published untainted with bindingConditions [PortActive] and bindingFailureConditions
// [PortActivationFailed] (KEP-5007) when the server keeps them: the scheduler may allocate it
// but binds the pod only once the driver set PortActive=True in the claim's status
// (dra/binding_conditions.h). RoCE and iWARP have no subnet manager: a port that is not usable
// is tainted, as is an IB port DOWN or on a server that drops binding conditions.
//
// Pure code: no I/O (the PCIe root is discovery's, PciInfo::pcie_root).
#pragma once

#include <string>
#include <vector>

#include "dra/api/resource_slice.h"
#include "dra/claim_status.h"
#include "dra/device_name.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::dra {

inline constexpr char kStandardPrefix[] = "resource.kubernetes.io/";
inline constexpr char kMultusPrefix[] = "k8s.cni.cncf.io/";  // Multus' DRA device attributes
inline constexpr char kSharesCapacity[] = "shares";
inline constexpr char kUnhealthyTaintKey[] = "unhealthy";  // "<driver>/unhealthy"
inline constexpr char kDefaultTaintEffect[] = "NoSchedule";
// The effects a device taint may have (resource.k8s.io/v1 DeviceTaintEffect, KEP-5055 beta).
inline constexpr const char* kTaintEffects[] = {"NoSchedule", "NoExecute", "None"};
// The driver's own condition types (KEP-5007) on a device whose IB port waits for the SM: the
// PortActive the claim status entries carry, and its failure (dra/claim_status.h).
inline constexpr const char* kBindingConditionPortActive = kConditionPortActive;
inline constexpr const char* kBindingFailurePortActivation = kConditionPortActivationFailed;

struct DeviceInput {
  RdmaDevice device;
  bool healthy = true;
  std::string unhealthy_reason;  // a short word ("PortDown"); the taint's value
};

struct SliceDeviceOptions {
  std::string driver;  // the DRA driver name, also the domain of our attributes
  // 0: exclusive, one device per RDMA function. N > 0: shared, N allocations per function.
  int shares = 0;
  // The effect of the unhealthy taint, the node admin's choice (--unhealthy-taint-effect):
  // NoSchedule (new claims skip the device), NoExecute (the controller manager also evicts the
  // pods using it) or None (informational). Never a claim's or a DeviceClass's.
  std::string taint_effect = kDefaultTaintEffect;
};

// What the API server accepts, learned from its answers (slice_publisher.h).
struct ServerFeatures {
  bool device_taints = true;        // KEP-5055: else unhealthy devices are withdrawn
  bool consumable_capacity = true;  // KEP-5075: else N named devices per function
  bool binding_conditions = true;   // KEP-5007: else a port waiting for the SM is tainted
  friend bool operator==(const ServerFeatures&, const ServerFeatures&) = default;
};

struct SliceDevicesResult {
  std::vector<SliceDevice> devices;  // sorted by name
  // The RDMA device behind each published device name (shares: "<name>-<k>" -> rdma_dev).
  std::vector<std::pair<std::string, std::string>> rdma_dev_of;
  std::vector<std::string> notes;    // attributes or devices left out, and why
};

// Whether `device` is an InfiniBand device none of whose ports is ACTIVE but one is INIT or
// ARMED: the subnet manager has not brought it up yet (it will in seconds, or never when no SM
// runs: the binding timeout decides).
bool AwaitsSubnetManager(const RdmaDevice& device);

// The publisher's input for discovered devices, all healthy (the caller marks the unhealthy
// ones).
std::vector<DeviceInput> DeviceInputsOf(const std::vector<RdmaDevice>& devices);

// Device names are DraDeviceNames(every input's rdma_dev, options.shares) (dra/device_name.h):
// the catalog names the same set by the same rule, so the preparer finds what a claim names.
// Devices that rule leaves unnamed are left out, with its note.
SliceDevicesResult BuildSliceDevices(const std::vector<DeviceInput>& inputs,
                                     const SliceDeviceOptions& options,
                                     const ServerFeatures& features);

}  // namespace rdmak8s::dra
