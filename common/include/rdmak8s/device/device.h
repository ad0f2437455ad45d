// The RDMA device model: what one RDMA device on a node is, in the kernel's own vocabulary.
//
// Values only; built by discovery (discovery.h) from sysfs, optionally enriched by libibverbs.
// Everything here is plain data, copyable and safe to share between threads once built.
//
// Vocabulary: `rdma_dev` is the kernel's RDMA device name (mlx5_0, rxe0, siw0); `netdev` a
// network interface name; `pci_addr` a PCI BDF with domain ("0000:3b:00.0"); `port_num` is
// 1-based; `gid_index` is the index into a port's GID table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmak8s {

// How the device moves RDMA traffic, which decides what a pod needs (see docs/transports.md):
//   kIb    InfiniBand link layer: subnet manager, LIDs, PKeys, umad/issm.
//   kRoce  Ethernet link layer on a CA: RoCE v1/v2, GIDs from IPs, wants lossless Ethernet.
//   kIwarp node type RNIC: TCP based, no PFC, no umad.
//   kUnknown something else (e.g. EFA-like "unspecified" node types): reported, never dropped.
enum class Transport { kIb, kRoce, kIwarp, kUnknown };

// /sys/class/infiniband/<dev>/node_type, "<n>: <name>" (include/rdma/ib_verbs.h RDMA_NODE_*).
enum class NodeType {
  kUnknown = 0,
  kCa = 1,
  kSwitch = 2,
  kRouter = 3,
  kRnic = 4,
  kUsnic = 5,
  kUsnicUdp = 6,
  kUnspecified = 7,
};

// What the RDMA device sits on.
//   kPci       a PCI function (PF or VF) — /sys/class/infiniband/<dev>/device is a PCI device.
//   kAuxiliary an auxiliary bus device, e.g. an mlx5 scalable function (mlx5_core.sf.N).
//   kVirtual   a software device on a netdev (rxe, siw): no bus device.
enum class ParentKind { kPci, kAuxiliary, kVirtual, kUnknown };

// Port state as in sysfs `ports/N/state` ("4: ACTIVE"); values from enum ib_port_state.
enum class PortState { kNop = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4, kActiveDefer = 5 };

// GID type as in sysfs `ports/N/gid_attrs/types/<i>` ("IB/RoCE v1" or "RoCE v2").
// The kernel prints "IB/RoCE v1" for both; we resolve it by link layer: kIb on InfiniBand ports,
// kRoceV1 on Ethernet ports of a CA; kUnknown on iWARP (RNIC) and unknown link layers, where the
// kernel prints it too but it means neither.
enum class GidType { kIb, kRoceV1, kRoceV2, kUnknown };

enum class CharDeviceKind { kUverbs, kUmad, kIssm, kRdmaCm };

std::string_view TransportName(Transport t);     // "ib", "roce", "iwarp", "unknown"
std::string_view NodeTypeName(NodeType t);       // "CA", "RNIC", ...
std::string_view ParentKindName(ParentKind k);   // "pci", "auxiliary", "virtual", "unknown"
std::string_view PortStateName(PortState s);     // "ACTIVE", "DOWN", ...
std::string_view GidTypeName(GidType t);         // "IB", "RoCE v1", "RoCE v2", "unknown"

// The one transport rule, for discovery and the CNI: an RNIC is iWARP (siw shows "IB/RoCE v1"
// GIDs: never classify iWARP by GID type); a CA, switch or router by the link layer of its first
// port ("InfiniBand", "Ethernet"; "" when it has none); anything else is kUnknown.
Transport TransportOf(NodeType node_type, std::string_view first_link_layer);

// Whether `name` is a host bridge directory name (PciInfo::pcie_root): "pci" + 4 or more hex
// digits (the domain; VMD domains have 5) + ':' + 2 hex digits (the bus).
bool IsPcieRootName(std::string_view name);

struct GidEntry {
  uint32_t index = 0;
  std::string gid;     // as sysfs prints it: "fe80:0000:0000:0000:0202:c9ff:fe00:0001"
  GidType type = GidType::kUnknown;
  std::string netdev;  // gid_attrs/ndevs/<i>; empty when the kernel shows none (IB)
};

struct Port {
  uint32_t port_num = 0;  // 1-based
  PortState state = PortState::kNop;
  uint32_t phys_state = 0;          // numeric part of phys_state ("5: LinkUp" -> 5)
  std::string phys_state_name;      // "LinkUp", "Disabled", ...
  std::string link_layer;           // "InfiniBand" | "Ethernet" (sysfs text)
  std::string rate;                 // "100 Gb/sec (4X EDR)" (sysfs text)
  // The rate's number, in Gb/s: 100, 2.5 ("2.5 Gb/sec (1X SDR)"); 0 when sysfs gives no rate or
  // one not in the kernel's form ("<n>[.5] Gb/sec (<w>X<speed>)", rate_show() in
  // drivers/infiniband/core/sysfs.c). Consumers read this, never the text.
  double rate_gbps = 0;
  // InfiniBand only (absent on Ethernet/iWARP ports).
  std::optional<uint32_t> lid;
  std::optional<uint32_t> sm_lid;
  std::optional<uint32_t> lmc;
  std::vector<uint16_t> pkeys;      // non-zero entries of pkeys/<i>, in index order
  // Only valid (non-zero) GIDs, in index order.
  std::vector<GidEntry> gids;
  // Netdevs bound to this port (for RoCE/iWARP: the port's netdev and its upper devices).
  std::vector<std::string> netdevs;
};

struct PciInfo {
  std::string address;                 // "0000:3b:00.0"
  uint16_t vendor_id = 0;              // 0x15b3
  uint16_t device_id = 0;
  uint16_t subsystem_vendor_id = 0;
  uint16_t subsystem_device_id = 0;
  int numa_node = -1;                  // -1 when unknown/not NUMA
  // PCI addresses from the root port down to (and including) this function, for locality.
  std::vector<std::string> pcie_path;
  // The host bridge the function sits under, as the standard DRA attribute
  // resource.kubernetes.io/pcieRoot names it: "pci<domain>:<bus>" ("pci0000:5d"), the directory
  // the kernel creates for a root bus (drivers/pci/probe.c, "pci%04x:%02x") above
  // devices/.../<function>. From the function's path in the tree as its links spell it (resolved
  // lexically, never with realpath(3)); empty when that path shows none.
  std::string pcie_root;
  bool is_vf = false;
  std::string pf_address;              // for a VF: the PF's address
  int vf_index = -1;                   // for a VF: N of the PF's virtfnN link pointing at it
  int sriov_totalvfs = 0;              // for a PF with SR-IOV
  int sriov_numvfs = 0;
};

struct Parent {
  ParentKind kind = ParentKind::kUnknown;
  std::optional<PciInfo> pci;  // kPci; for kAuxiliary, the PCI function that owns it
  std::string aux_name;        // kAuxiliary: "mlx5_core.sf.2"
  std::string lower_netdev;    // kVirtual: the netdev the soft device runs on
};

struct CharDevice {
  CharDeviceKind kind = CharDeviceKind::kUverbs;
  std::string name;    // kernel name: "uverbs0", "umad1", "issm1", "rdma_cm"
  uint32_t major = 0;  // from sysfs `dev` ("231:192")
  uint32_t minor = 0;
  uint32_t port_num = 0;  // umad/issm: the port they serve; 0 otherwise
  // The canonical path in a container and on a standard host: "/dev/infiniband/<name>".
  std::string ContainerPath() const { return "/dev/infiniband/" + name; }
};

// One port as ibv_query_port sees it. MTUs in bytes (256..4096); 0 when unknown. sysfs has no
// MTU attribute for an RDMA port: only verbs shows it.
struct VerbsPortAttrs {
  uint32_t port_num = 0;
  uint32_t active_mtu = 0;
  uint32_t max_mtu = 0;
};

// Attributes libibverbs adds when the device is visible to it (ibv_query_device/port).
struct VerbsAttrs {
  std::string fw_ver;
  uint32_t max_qp = 0;
  uint32_t max_cq = 0;
  uint32_t max_mr = 0;
  uint32_t max_pd = 0;
  uint32_t phys_port_cnt = 0;
  std::vector<VerbsPortAttrs> ports;  // those ibv_query_port answered for, by port_num
};

struct RdmaDevice {
  std::string name;  // rdma_dev
  NodeType node_type = NodeType::kUnknown;
  Transport transport = Transport::kUnknown;
  bool roce_v1 = false;  // kRoce: the GID tables show RoCE v1 entries
  bool roce_v2 = false;  // kRoce: the GID tables show RoCE v2 entries
  std::string node_guid;       // "0002:c903:0000:0001"
  std::string sys_image_guid;
  std::string fw_ver;
  std::string hca_type;        // empty when absent
  std::string board_id;        // empty when absent
  // Kernel driver of the parent bus device: the PCI function's ("mlx5_core", "ice", "bnxt_en",
  // "cxgb4"), an SF's ("mlx5_core.sf"); "rxe" / "siw" for soft devices.
  std::string driver;
  // Kernel driver (module) that registered the RDMA device itself: "mlx5_ib", "irdma", "bnxt_re",
  // "rxe", "siw". From the auxiliary device the NIC driver creates for RDMA under the parent
  // (<parent>/<nic>.{rdma,roce,iwarp}.<n>/driver -> bus/auxiliary/drivers/<module>[.<name>]).
  // Empty when sysfs does not show it (drivers not on the auxiliary bus, e.g. iw_cxgb4).
  std::string rdma_driver;
  Parent parent;
  std::vector<Port> ports;
  std::vector<std::string> netdevs;           // union of the ports' netdevs
  // The netdev of the physical function behind the device, where DCB and ECN live (pf_netdev.h,
  // the CNI's rule): the PF's for a PF, a VF or an SF, a soft device's lower netdev; "" when none.
  std::string pf_netdev;
  // The other RDMA devices the kernel lists on the same bus device (<bus device>/infiniband/) in
  // this sysfs view, sorted; empty for a soft device. Two RDMA drivers on one function make
  // its bus device ID ambiguous (device_id.h ExclusiveDeviceId).
  std::vector<std::string> bus_peers;
  std::vector<CharDevice> char_devices;       // uverbs, umad, issm of this device, and rdma_cm
  std::optional<VerbsAttrs> verbs;            // when enriched through libibverbs

  int numa_node() const { return parent.pci ? parent.pci->numa_node : -1; }
  const std::string& pci_address() const {
    static const std::string kEmpty;
    return parent.pci ? parent.pci->address : kEmpty;
  }
  // The ID of the bus device the RDMA device sits on: the PCI address (PF/VF), the auxiliary
  // device name (SF); empty for a soft device or an unknown parent.
  std::string bus_device_id() const {
    if (parent.kind == ParentKind::kPci) return pci_address();
    if (parent.kind == ParentKind::kAuxiliary) return parent.aux_name;
    return "";
  }
  const Port* FindPort(uint32_t port_num) const;
  const CharDevice* FindCharDevice(CharDeviceKind kind, uint32_t port_num = 0) const;
};

}  // namespace rdmak8s
