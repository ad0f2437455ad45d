// A port's GID table in sysfs: the slot reader and the GID search (rdmak8s/device/gid_table.h).
#include "rdmak8s/device/gid_table.h"

#include <algorithm>
#include <array>
#include <utility>

#include "rdmak8s/base/numbers.h"
#include "rdmak8s/device/roce_gid.h"

namespace rdmak8s {
namespace {

// One of the port's gid_attrs/ directories (types, ndevs), opened when a slot first needs it:
// a table whose slots are all empty (or not wanted) never opens it.
// Under a port directory already open (`port`), read relative to it without a descriptor.
class AttrDir {
 public:
  AttrDir(const SysfsDir* port, const std::string& port_dir, const std::string& kind)
      : port_(port), rel_("gid_attrs/" + kind + "/"), path_(port_dir + "/gid_attrs/" + kind) {}

  // Slot `idx`'s attribute; nullopt when the kernel shows none (no directory, no file, EINVAL).
  StatusOr<std::optional<std::string>> Read(const std::string& idx) {
    if (port_ != nullptr) return Value(port_->Read(rel_ + idx));
    if (!opened_) {
      opened_ = true;
      StatusOr<SysfsDir> d = SysfsDir::Open(path_);
      if (d.ok()) {
        dir_.emplace(std::move(d).value());
      } else if (d.status().code() != StatusCode::kNotFound) {
        open_error_ = d.status();
      }
    }
    if (!open_error_.ok()) return open_error_;
    if (!dir_) return std::optional<std::string>();
    return Value(dir_->Read(idx));
  }

 private:
  static StatusOr<std::optional<std::string>> Value(StatusOr<std::string> r) {
    if (r.ok()) return std::optional<std::string>(std::move(r).value());
    const StatusCode c = r.status().code();
    if (c == StatusCode::kNotFound || c == StatusCode::kInvalidArgument) {
      return std::optional<std::string>();
    }
    return r.status();
  }

  const SysfsDir* port_;
  std::string rel_;
  std::string path_;
  bool opened_ = false;
  std::optional<SysfsDir> dir_;
  Status open_error_ = Status::Ok();
};

// gids/<idx>: the GID text, nullopt for an empty slot (the zero GID). kNotFound when the slot is
// missing; a text that is not a GID is an error naming the path.
// `dir` is gids/ (`rel` "") or the port directory (`rel` "gids/").
StatusOr<std::optional<std::string>> ReadGidSlot(const SysfsDir& dir, const std::string& rel,
                                                 const std::string& idx) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string text, dir.Read(rel + idx));
  std::array<unsigned char, 16> bytes{};
  if (!ParseGid(text, bytes.data())) {
    return InternalError("read " + dir.PathOf(rel + idx) + ": \"" + text + "\" is not a GID");
  }
  if (std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == 0; })) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::move(text));
}

// The slot indexes gids/ lists, sorted; a name that is not a number is an error naming it.
StatusOr<std::vector<uint32_t>> ListSlots(const SysfsDir& dir, const std::string& rel) {
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names,
                           dir.List(rel.empty() ? "" : rel.substr(0, rel.size() - 1)));
  std::vector<uint32_t> indexes;
  indexes.reserve(names.size());
  for (const std::string& n : names) {
    RDMAK8S_ASSIGN_OR_RETURN(uint64_t index, ParseUint(n, dir.PathOf(rel + n)));
    indexes.push_back(static_cast<uint32_t>(index));
  }
  std::sort(indexes.begin(), indexes.end());
  return indexes;
}

}  // namespace

GidType GidTypeOf(std::string_view text, std::string_view link_layer, bool rnic) {
  const bool ib = link_layer == "InfiniBand";
  if (text == "RoCE v2") return GidType::kRoceV2;
  if (text == "IB/RoCE v1") {
    if (ib) return GidType::kIb;
    return link_layer == "Ethernet" && !rnic ? GidType::kRoceV1 : GidType::kUnknown;
  }
  if (text.empty() && ib) return GidType::kIb;
  return GidType::kUnknown;
}

bool GidMatches(const GidEntry& entry, const std::string& gid, GidType type) {
  // GidForIp spells an IPv6 address, hence a GID text, the way `gid` is spelled.
  return entry.type == type && GidForIp(entry.gid) == gid;
}

StatusOr<GidTable> GidTable::Open(const std::string& port_dir, std::string link_layer, bool rnic) {
  RDMAK8S_ASSIGN_OR_RETURN(SysfsDir gids, SysfsDir::Open(port_dir + "/gids"));
  return GidTable(port_dir, std::move(gids), nullptr, std::move(link_layer), rnic);
}

GidTable GidTable::OfPort(const SysfsDir& port, std::string link_layer, bool rnic) {
  return GidTable(port.path(), std::nullopt, &port, std::move(link_layer), rnic);
}

StatusOr<std::vector<GidEntry>> GidTable::ReadAll() const {
  const SysfsDir& dir = port_ != nullptr ? *port_ : *gids_;
  const std::string rel = port_ != nullptr ? "gids/" : "";
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<uint32_t> indexes, ListSlots(dir, rel));
  AttrDir types(port_, port_dir_, "types");
  AttrDir ndevs(port_, port_dir_, "ndevs");
  std::vector<GidEntry> out;
  for (uint32_t i : indexes) {
    const std::string idx = std::to_string(i);
    StatusOr<std::optional<std::string>> gid = ReadGidSlot(dir, rel, idx);
    if (!gid.ok()) {
      if (gid.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
      return gid.status();
    }
    if (!*gid) continue;  // empty; its gid_attrs would answer EINVAL
    GidEntry e;
    e.index = i;
    e.gid = std::move(**gid);
    RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> type, types.Read(idx));
    e.type = GidTypeOf(type ? *type : "", link_layer_, rnic_);
    RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> netdev, ndevs.Read(idx));
    if (netdev) e.netdev = std::move(*netdev);
    out.push_back(std::move(e));
  }
  return out;
}

StatusOr<GidSearch> GidTable::Search(const std::set<std::string>& wanted, GidType type,
                                     GidScope scope) const {
  GidSearch r;
  if (wanted.empty()) return r;
  const SysfsDir& dir = port_ != nullptr ? *port_ : *gids_;
  const std::string rel = port_ != nullptr ? "gids/" : "";
  std::vector<uint32_t> indexes;  // kWholeTable: every slot listed
  if (scope == GidScope::kWholeTable) {
    RDMAK8S_ASSIGN_OR_RETURN(indexes, ListSlots(dir, rel));
    r.first_free = indexes.empty() ? 0 : indexes.back() + 1;
  }
  AttrDir types(port_, port_dir_, "types");
  bool free_seen = false;
  for (size_t k = 0;; ++k) {
    uint32_t i = 0;
    if (scope == GidScope::kWholeTable) {
      if (k == indexes.size()) break;
      i = indexes[k];
    } else {
      i = static_cast<uint32_t>(k);
    }
    const std::string idx = std::to_string(i);
    StatusOr<std::optional<std::string>> g = ReadGidSlot(dir, rel, idx);
    if (!g.ok()) {
      if (g.status().code() != StatusCode::kNotFound) return g.status();
      if (scope == GidScope::kFilledPrefix) {  // past the table's end
        if (!free_seen) r.first_free = i;
        break;
      }
      continue;  // removed meanwhile
    }
    ++r.slots_read;
    if (!*g) {
      if (i >= kFirstFreeGidIndex && !free_seen) {
        free_seen = true;
        r.first_free = i;
        if (scope == GidScope::kFilledPrefix) break;
      }
      continue;
    }
    GidEntry e;
    e.index = i;
    e.gid = std::move(**g);
    const std::string gid = GidForIp(e.gid);  // the same spelling as `wanted`
    if (wanted.count(gid) == 0 || r.found.count(gid) != 0) continue;
    // The type only of a wanted GID: the table of a busy node has hundreds of others.
    RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, types.Read(idx));
    e.type = GidTypeOf(text ? *text : "", link_layer_, rnic_);
    if (!GidMatches(e, gid, type)) continue;
    r.found[gid] = i;
    if (r.found.size() == wanted.size()) break;
  }
  return r;
}

}  // namespace rdmak8s
