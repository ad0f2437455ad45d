#include "cni/rdma_sysfs.h"

#include <algorithm>
#include <optional>

#include "rdmak8s/roce_gid.h"
#include "rdmak8s/sysfs_attr.h"

namespace rdmak8s::cni {

StatusOr<std::vector<SysfsGid>> RdmaSysfs::ReadGids(const std::string& dev, uint32_t port) const {
  const std::string base = root() + "/class/infiniband/" + dev + "/ports/" + std::to_string(port);
  RDMAK8S_ASSIGN_OR_RETURN(auto names, ListSysfsDir(base + "/gids"));
  std::vector<SysfsGid> out;
  for (const auto& n : names) {
    auto g = ReadSysfsAttr(base + "/gids/" + n);
    if (!g.ok()) {
      if (g.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
      return g.status();
    }
    unsigned char b[16];
    if (!ParseGid(*g, b)) continue;
    if (std::all_of(b, b + 16, [](unsigned char c) { return c == 0; })) continue;
    SysfsGid gid;
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t index, ParseUint(n, base + "/gids/" + n));
    gid.index = static_cast<uint32_t>(index);
    gid.gid = *g;
    // The kernel answers EINVAL for attributes of empty/IB GIDs: absent, not an error.
    if (auto t = ReadSysfsAttr(base + "/gid_attrs/types/" + n); t.ok()) gid.type = *t;
    if (auto nd = ReadSysfsAttr(base + "/gid_attrs/ndevs/" + n); nd.ok()) gid.netdev = *nd;
    out.push_back(gid);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.index < b.index; });
  return out;
}

StatusOr<std::map<std::string, uint32_t>> RdmaSysfs::FindGids(
    const std::string& dev, uint32_t port, const std::set<std::string>& wanted,
    const std::string& type) const {
  RDMAK8S_ASSIGN_OR_RETURN(GidSearch r, SearchGids(dev, port, wanted, type, GidScope::kWholeTable));
  return std::move(r.found);
}

StatusOr<GidSearch> RdmaSysfs::SearchGids(const std::string& dev, uint32_t port,
                                          const std::set<std::string>& wanted, const std::string& type,
                                          GidScope scope) const {
  const std::string base = root() + "/class/infiniband/" + dev + "/ports/" + std::to_string(port);
  GidSearch r;
  if (wanted.empty()) return r;
  const std::string gids_path = base + "/gids", types_path = base + "/gid_attrs/types";
  std::vector<uint32_t> indexes;  // kWholeTable: every slot listed
  if (scope == GidScope::kWholeTable) {
    RDMAK8S_ASSIGN_OR_RETURN(auto names, ListSysfsDir(gids_path));
    indexes.reserve(names.size());
    for (const auto& n : names) {
      RDMAK8S_ASSIGN_OR_RETURN(uint64_t index, ParseUint(n, gids_path + "/" + n));
      indexes.push_back(static_cast<uint32_t>(index));
    }
    std::sort(indexes.begin(), indexes.end());
    r.first_free = indexes.empty() ? 0 : indexes.back() + 1;
  }
  RDMAK8S_ASSIGN_OR_RETURN(SysfsDir gids, SysfsDir::Open(gids_path));
  std::optional<SysfsDir> types;  // opened for the first wanted GID
  bool types_missing = false;
  bool free_seen = false;
  for (size_t k = 0;; ++k) {
    uint32_t i;
    if (scope == GidScope::kWholeTable) {
      if (k == indexes.size()) break;
      i = indexes[k];
    } else {
      i = static_cast<uint32_t>(k);
    }
    const std::string idx = std::to_string(i);
    auto g = gids.Read(idx);
    if (!g.ok()) {
      if (g.status().code() != StatusCode::kNotFound) return g.status();
      if (scope == GidScope::kFilledPrefix) {  // past the table's end
        if (!free_seen) r.first_free = i;
        break;
      }
      continue;  // removed meanwhile
    }
    ++r.slots_read;
    unsigned char bytes[16];
    const bool empty = !ParseGid(*g, bytes) ||
                       std::all_of(bytes, bytes + 16, [](unsigned char c) { return c == 0; });
    if (empty && i >= kFirstFreeGidIndex && !free_seen) {
      free_seen = true;
      r.first_free = i;
      if (scope == GidScope::kFilledPrefix) break;
    }
    if (empty) continue;
    const std::string gid = GidForIp(*g);  // the same spelling as `wanted`
    if (!wanted.count(gid) || r.found.count(gid)) continue;
    if (!types && !types_missing) {
      auto opened = SysfsDir::Open(types_path);
      if (opened.ok()) {
        types.emplace(std::move(opened).value());
      } else {
        types_missing = true;  // no attributes: no type to match
      }
    }
    if (!types) continue;
    // The kernel answers EINVAL for attributes of an entry freed meanwhile: not this type.
    auto t = types->Read(idx);
    if (!t.ok() || *t != type) continue;
    r.found[gid] = i;
    if (r.found.size() == wanted.size()) break;
  }
  return r;
}

}  // namespace rdmak8s::cni
