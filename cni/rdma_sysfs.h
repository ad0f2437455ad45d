// What the CNI reads from sysfs about RDMA devices, under a configurable root (fixture trees in
// tests). Narrower and cheaper than full discovery (discovery.h): an ADD touches one device.
//   class/infiniband/<dev>/{device,parent,node_type}, ports/<n>/{state,link_layer,pkeys/<i>,
//   gids/<i>,gid_attrs/types/<i>,gid_attrs/ndevs/<i>}, class/net/<netdev>/{device,dev_port,
//   lower_*}, bus/pci/devices/<bdf>/{physfn,net/}
// A missing file is kNotFound, never folded into a generic failure. Links are read and resolved
// lexically inside the tree (sysfs links are relative), never with realpath(3): the root may be
// a handle on a sysfs mount of another netns ("/proc/self/fd/N", see sysfs_view.h) that
// realpath would turn into a path of the caller's mount namespace.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rdmak8s/device.h"
#include "rdmak8s/status.h"

namespace rdmak8s::cni {

struct SysfsGid {
  uint32_t index = 0;
  std::string gid;        // as printed: 8 groups of 4 hex digits
  std::string type;       // "RoCE v2", "IB/RoCE v1", "" when unreadable
  std::string netdev;
};

// How much of a port's GID table one search reads.
enum class GidScope {
  // Every slot (a directory listing, then gids/<i> in index order until all wanted are found).
  kWholeTable,
  // The filled prefix: gids/<i> from 0 up to and including the first empty slot past the
  // reserved default ones (kFirstFreeGidIndex). The kernel adds a RoCE GID in the first free
  // slot (drivers/infiniband/core/cache.c, find_gid's `empty`), so a GID added while a caller
  // waits shows there; one added before a lower slot was freed may sit past the hole, which only
  // kWholeTable finds. A missing gids/<i> ends the prefix (the kernel lists every slot).
  kFilledPrefix,
};

// The lowest index where a GID search may stop at an empty slot: RoCE ports reserve the first
// slots for their default (link-local) GIDs, one per GID type (ib_cache_setup_one,
// gid_table_reserve_default), at most IB/RoCE v1 and RoCE v2.
inline constexpr uint32_t kFirstFreeGidIndex = 2;

// What one GID search found, and how much of the table it read.
struct GidSearch {
  std::map<std::string, uint32_t> found;  // wanted GID -> its index
  // Index of the first empty slot at or past kFirstFreeGidIndex (the table's size when none was
  // read): where the kernel's next GID goes, and unchanged while the table is.
  uint32_t first_free = 0;
  uint32_t slots_read = 0;  // gids/<i> files opened
};

struct SysfsPort {
  uint32_t port_num = 0;
  PortState state = PortState::kNop;
  std::string link_layer;
};

struct SysfsDevice {
  std::string name;
  std::string parent;       // basename of the `device` link: PCI address or auxiliary name
  std::string parent_rel;   // its directory relative to the sysfs root (devices/...); empty
                            // for a virtual device. Untagged: the same in every netns's view.
  std::string lower_netdev; // soft devices (rxe `parent` attribute)
  Transport transport = Transport::kUnknown;
  std::vector<SysfsPort> ports;
};

class RdmaSysfs {
 public:
  explicit RdmaSysfs(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }

  // kNotFound when class/infiniband does not exist (no RDMA core).
  StatusOr<std::vector<std::string>> ListDevices() const;
  StatusOr<SysfsDevice> ReadDevice(const std::string& rdma_dev) const;
  StatusOr<std::vector<SysfsGid>> ReadGids(const std::string& rdma_dev, uint32_t port) const;
  StatusOr<std::vector<uint16_t>> ReadPkeys(const std::string& rdma_dev, uint32_t port) const;
  StatusOr<PortState> ReadPortState(const std::string& rdma_dev, uint32_t port) const;

  // deviceID as Multus passes it (rdmak8s/device_id.h): an RDMA device name, a PCI address or
  // an auxiliary device name, or a shared pool ID "<rdma_dev>-<k>". kNotFound when this view
  // shows no such device; kInvalidArgument naming them when several match.
  StatusOr<std::string> ResolveDeviceId(const std::string& id) const;
  // The RDMA device `id` names when this view's class/infiniband does not show it but its uverbs
  // char device (class/infiniband_verbs, not netns tagged) does: in exclusive mode, a device in
  // another netns. kNotFound otherwise.
  StatusOr<std::string> ResolveHiddenDeviceId(const std::string& id) const;
  // The RoCE GIDs among `wanted` (as GidForIp prints them) that port `port` holds with GID type
  // `type` ("RoCE v2"), with their index. Reads only what it needs: gids/<i> in index order,
  // gid_attrs/types/<i> only for a wanted GID, and stops once every wanted GID is found. (The
  // table can have holes, so a GID that is not there costs a read of the whole table.)
  StatusOr<std::map<std::string, uint32_t>> FindGids(const std::string& rdma_dev, uint32_t port,
                                                     const std::set<std::string>& wanted,
                                                     const std::string& type) const;
  // The same search over `scope` of the table, with what it read. Reads go through descriptors
  // on gids/ and gid_attrs/types/ (openat: one path walk per directory, not per slot). The
  // first read error other than a missing file, naming its path.
  StatusOr<GidSearch> SearchGids(const std::string& rdma_dev, uint32_t port,
                                 const std::set<std::string>& wanted, const std::string& type,
                                 GidScope scope) const;
  // The RDMA device on the bus device named `parent` (IFLA_PARENT_DEV_NAME).
  StatusOr<std::string> ResolveByParent(const std::string& parent) const;
  // The RDMA device of a netdev visible in this sysfs: its bus device, or (VLAN, bond) its lower
  // devices, or a soft device's `parent`, or a GID's ndev. *port_num gets dev_port+1 when known.
  StatusOr<std::string> ResolveByNetdev(const std::string& netdev, uint32_t* port_num) const;
  // The netdev's bus device: basename of class/net/<netdev>/device (a PCI address or auxiliary
  // name); "" for a virtual netdev or an unknown one.
  std::string NetdevBusDevice(const std::string& netdev) const;
  // The netdev's port on its device: class/net/<netdev>/dev_port + 1; 0 when unknown.
  uint32_t NetdevPort(const std::string& netdev) const;
  // The netdev of the physical function behind the device (DCB and ECN live there): the PF of a
  // VF, the PCI owner of an SF, the device itself for a PF, the lower netdev of a soft device.
  // kNotFound when there is none.
  StatusOr<std::string> PfNetdev(const SysfsDevice& dev) const;

 private:
  // `rel` (relative to the root) with every symlink on the way resolved inside the tree; "" if
  // a component is missing or unreadable.
  std::string Resolve(const std::string& rel) const;

  std::string root_;
};

// Parses a GID as sysfs prints it into 16 bytes; false if malformed.
bool ParseGid(const std::string& text, unsigned char out[16]);
// The RoCE v2 GID text of an IP ("10.0.0.2" -> "0000:...:ffff:0a00:0002"); "" if not an IP.
std::string GidForIp(const std::string& ip);

}  // namespace rdmak8s::cni
