// What the CNI reads from sysfs about a port's GID table, under a configurable root (fixture
// trees in tests). Resolving and reading devices is common's (rdmak8s/device_lookup.h), which
// RdmaSysfs extends with the GID reads:
//   class/infiniband/<dev>/ports/<n>/{gids/<i>,gid_attrs/types/<i>,gid_attrs/ndevs/<i>}
// Reads through the one sysfs reader (rdmak8s/sysfs_attr.h): a missing file is kNotFound.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rdmak8s/device_lookup.h"
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

class RdmaSysfs : public DeviceLookup {
 public:
  using DeviceLookup::DeviceLookup;

  // The populated GIDs of port `port` (zero entries skipped), by index; type and netdev "" when
  // the kernel does not say.
  StatusOr<std::vector<SysfsGid>> ReadGids(const std::string& rdma_dev, uint32_t port) const;
  // The RoCE GIDs among `wanted` (as GidForIp prints them, rdmak8s/roce_gid.h) that port `port` holds with GID type
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
};

}  // namespace rdmak8s::cni
