// A port's GID table in sysfs: the one reader of a GID slot (gid, type, netdev) and the one GID
// search, for discovery's port model (Port::gids) and the CNI's wait for a pod's RoCE GIDs.
//   class/infiniband/<dev>/ports/<n>/{gids/<i>,gid_attrs/types/<i>,gid_attrs/ndevs/<i>}
// Reads go through descriptors (SysfsDir, openat: one path walk per directory, not per slot): on
// gids/ and gid_attrs/{types,ndevs}/, the attribute directories opened only when a slot needs
// them, or on the port directory discovery has open. Errors follow the one sysfs reader (sysfs_attr.h) and name the path: a missing gids/<i> is
// kNotFound; an attribute the kernel does not show (no gid_attrs/, no file, or EINVAL: its answer
// for the attributes of an empty or freed entry, and for ndevs of a GID without a netdev) is "no
// value"; any other read failure is an error, never folded into "no value".
//
// Thread safety: a GidTable is immutable after Open; its methods may run on several threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"
#include "rdmak8s/device/sysfs_attr.h"

namespace rdmak8s {

// The type of a GID from its gid_attrs/types/<i> text ("" when the kernel shows none) on a port of
// `link_layer` ("InfiniBand", "Ethernet"; "" when unknown) of a device that is (`rnic`) or is not
// an RNIC. "IB/RoCE v1" means IB on an InfiniBand port and RoCE v1 on an Ethernet port of a CA;
// iWARP (siw, irdma, cxgb4) and unknown link layers print it too, where it means neither
// (kUnknown). "RoCE v2" is kRoceV2 whatever the port. No text on an InfiniBand port is kIb.
GidType GidTypeOf(std::string_view text, std::string_view link_layer, bool rnic);

// Whether `entry` is `gid` (as GidForIp prints it, roce_gid.h) of type `type`: the one match
// rule, for the search below and for callers holding the model's Port::gids (the node check).
bool GidMatches(const GidEntry& entry, const std::string& gid, GidType type);

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

class GidTable {
 public:
  // The GID table of the port directory `port_dir` (class/infiniband/<dev>/ports/<n>); its port's
  // `link_layer` and whether the device is an RNIC decide what "IB/RoCE v1" means (GidTypeOf; a
  // search for kRoceV2 needs neither). kNotFound when the port has no gids/ directory.
  static StatusOr<GidTable> Open(const std::string& port_dir, std::string link_layer = "",
                                 bool rnic = false);
  // The same table read relative to the port directory `port` already open (discovery's): no
  // descriptor of its own, so a whole read costs what reading the port's attributes does.
  // `port` must outlive the table; a port without gids/ shows as ReadAll's kNotFound.
  static GidTable OfPort(const SysfsDir& port, std::string link_layer, bool rnic);

  // Every populated slot (the zero GID is an empty slot, skipped) in index order, with its type
  // and netdev ("" when the kernel shows none). A slot removed between the listing and its read
  // is skipped; a GID text that is not a GID is an error naming its path.
  StatusOr<std::vector<GidEntry>> ReadAll() const;

  // The GIDs among `wanted` (as GidForIp prints them) that the table holds with type `type`, with
  // their index, over `scope` of the table. Reads only what it needs: gids/<i> in index order,
  // gid_attrs/types/<i> only for a wanted GID, never gid_attrs/ndevs, and stops once every
  // wanted GID is found. The first read error other than a missing slot, naming its path; an
  // unreadable type of a wanted GID is such an error.
  StatusOr<GidSearch> Search(const std::set<std::string>& wanted, GidType type,
                             GidScope scope) const;

 private:
  GidTable(std::string port_dir, std::optional<SysfsDir> gids, const SysfsDir* port,
           std::string link_layer, bool rnic)
      : port_dir_(std::move(port_dir)), gids_(std::move(gids)), port_(port),
        link_layer_(std::move(link_layer)), rnic_(rnic) {}

  std::string port_dir_;
  std::optional<SysfsDir> gids_;      // Open: gids/
  const SysfsDir* port_ = nullptr;    // OfPort: the port directory, gids/ beneath it
  std::string link_layer_;
  bool rnic_ = false;
};

}  // namespace rdmak8s
