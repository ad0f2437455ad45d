// DeviceLookup: which RDMA device an ID or a netdev names, and the few facts about one device
// that an attachment needs, read from one sysfs view: the node's, a pod's ("/proc/self/fd/<N>",
// cni/sysfs_view.h) or a fixture tree. Narrower and cheaper than DiscoverOne (discovery.h),
// which builds the whole model: an ADD touches one device and few of its attributes.
//   class/infiniband/<dev>/{device,parent,node_type},
//   class/infiniband/<dev>/ports/<n>/{state,phys_state,link_layer,pkeys/<i>},
//   class/infiniband_verbs/uverbs<N>/{ibdev,device}, class/net/<netdev>/{device,dev_port,lower_*},
//   bus/{pci,auxiliary}/devices/<bus device>/{infiniband/,physfn,net/}
// Reads through the one sysfs reader (sysfs_attr.h): a missing file is kNotFound, never folded
// into a generic failure; links are resolved lexically inside the tree, never with realpath(3).
// The ID rule is device_id.h's, the transport rule device.h's, the same discovery uses.
//
// Thread safety: immutable; every method may be called from several threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s {

// One RDMA device as DeviceLookup::ReadDevice reads it: the model's own RdmaDevice (device.h)
// with a documented subset filled, and where this sysfs view shows its bus device. That path is
// not a fact of the device but of the view (relative to its root, so the same in the node's and
// a pod's: devices/ is not netns tagged), so it sits here, beside the model, and not in it.
//
// Filled (everything else keeps its default):
//   name, node_type, transport          node_type; transport by TransportOf (device.h)
//   parent.kind                         kVirtual without a `device` link; kPci when the link's
//                                       last component is a PCI address; kAuxiliary when it is
//                                       not but its directory sits in a PCI function's; else
//                                       kUnknown. From the link alone: a soft device with a
//                                       `device` link (siw on a PCI NIC) reads as that function,
//                                       where discovery calls it kVirtual.
//   parent.pci->address                 kPci only (no other PciInfo field)
//   parent.aux_name                     kAuxiliary only
//   parent.lower_netdev                 the `parent` attribute (rxe), whatever the kind; empty
//                                       for siw, which has none (discovery finds its netdev)
//   ports[i].{port_num, state, phys_state, phys_state_name, link_layer}, by port_num: what the
//                                       port-usable rule (port_usable.h) and the transport take
struct LookedUpDevice : RdmaDevice {
  // The bus device's directory relative to the sysfs root ("devices/pci0000:5d/.../0000:5e:00.2");
  // empty without a `device` link (a soft device over a virtual netdev).
  std::string parent_rel;
};

// The RDMA devices the kernel lists under the bus device directory `bus_dir` (its infiniband/
// glue directory, netns tagged like class/infiniband), sorted: the one "which RDMA device is on
// this function" rule, for discovery and the CNI. Empty when there is none (no infiniband/).
StatusOr<std::vector<std::string>> RdmaDevicesOnBusDir(const std::string& bus_dir);

class DeviceLookup {
 public:
  explicit DeviceLookup(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }

  // class/infiniband, sorted. kNotFound when it does not exist (no RDMA core).
  StatusOr<std::vector<std::string>> ListDevices() const;
  // One device's subset of the model (LookedUpDevice says which fields). kNotFound when it is
  // not in this view; other errors name the attribute that could not be read.
  StatusOr<LookedUpDevice> ReadDevice(const std::string& rdma_dev) const;
  // ports/<port>/{state,phys_state,link_layer} as a Port (port_num, state, phys_state,
  // phys_state_name, link_layer). InternalError when the state's number is not one we know.
  StatusOr<Port> ReadPort(const std::string& rdma_dev, uint32_t port) const;
  // ports/<port>/state; InternalError when the kernel's number is not one we know.
  StatusOr<PortState> ReadPortState(const std::string& rdma_dev, uint32_t port) const;
  // The non-zero entries of ports/<port>/pkeys, in index order.
  StatusOr<std::vector<uint16_t>> ReadPkeys(const std::string& rdma_dev, uint32_t port) const;

  // deviceID as Multus passes it (device_id.h): an RDMA device name, a PCI address or an
  // auxiliary device name, or a shared pool ID "<rdma_dev>-<k>". kNotFound when this view
  // shows no such device; kInvalidArgument naming them when several sit on the bus device.
  StatusOr<std::string> ResolveDeviceId(const std::string& id) const;
  // The RDMA device `id` names when this view's class/infiniband does not show it but its uverbs
  // char device (class/infiniband_verbs, not netns tagged) does: in exclusive mode, a device in
  // another netns. kNotFound otherwise.
  StatusOr<std::string> ResolveHiddenDeviceId(const std::string& id) const;
  // The RDMA device on the bus device named `parent` (IFLA_PARENT_DEV_NAME; RdmaDevicesOnBusDir).
  // kNotFound when there is none; kInvalidArgument naming them when there are several.
  StatusOr<std::string> ResolveByParent(const std::string& parent) const;
  // The RDMA device of a netdev visible in this sysfs: its bus device, or a soft device's
  // `parent`, or (VLAN, bond) its lower devices, or a GID's ndev. *port_num gets dev_port+1 when
  // known.
  // Soft devices of several namespaces' netdevs of one name (every pod's eth0) are told apart by
  // the node GUID rxe and siw derive from the netdev's MAC; kInvalidArgument naming them when
  // that does not pick exactly one.
  StatusOr<std::string> ResolveByNetdev(const std::string& netdev, uint32_t* port_num) const;
  // The netdev's bus device: basename of class/net/<netdev>/device (a PCI address or auxiliary
  // name); "" for a virtual netdev or an unknown one.
  std::string NetdevBusDevice(const std::string& netdev) const;
  // The netdev's port on its device: class/net/<netdev>/dev_port + 1; 0 when unknown.
  uint32_t NetdevPort(const std::string& netdev) const;
  // The netdev of the physical function behind the device (DCB and ECN live there): the PF of a
  // VF, the PCI owner of an SF, the device itself for a PF, the lower netdev of a soft device.
  // kNotFound when there is none.
  StatusOr<std::string> PfNetdev(const LookedUpDevice& dev) const;

 private:
  // ResolveByNetdev's choice among soft devices all naming `netdev` as parent (`named`, 2+).
  StatusOr<std::string> OneSoftDeviceOf(const std::string& netdev,
                                        const std::vector<std::string>& named) const;
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }
  bool Exists(const std::string& rel) const;

  std::string root_;
};

}  // namespace rdmak8s
