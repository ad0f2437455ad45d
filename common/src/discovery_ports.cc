// Discovery's port reader: state, rate, LIDs, PKeys, GIDs with their types and netdevs.
#include "discovery_ports.h"

#include <string>

#include "discovery_context.h"

namespace rdmak8s::internal::discovery {

using internal::ParseUint;

namespace {

bool IsZeroGid(std::string_view gid) {
  for (char c : gid) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

// Absent attribute, or EINVAL (the kernel's answer for gid_attrs of an empty GID and for
// gid_attrs/ndevs of a GID without a netdev): no value. Anything else is a read failure.
StatusOr<std::string> ReadGidAttr(const SysfsDir& port, const std::string& rel) {
  StatusOr<std::string> r = port.Read(rel);
  if (r.ok()) return r;
  StatusCode c = r.status().code();
  if (c == StatusCode::kNotFound || c == StatusCode::kInvalidArgument) return std::string();
  return r.status();
}


// rate_show() prints "%d%s Gb/sec (%dX%s)" with "%s" ".5" or "" (drivers/infiniband/core/
// sysfs.c): the number in Gb/s, 0 for anything else.
double RateGbps(std::string_view rate) {
  const std::string_view number = rate.substr(0, rate.find(' '));
  if (number.size() == rate.size() || rate.substr(number.size()).rfind(" Gb/sec", 0) != 0) return 0;
  const size_t dot = number.find('.');
  StatusOr<uint64_t> whole = ParseUint(number.substr(0, dot), "rate");
  if (!whole.ok() || number.substr(0, 2) == "0x") return 0;
  if (dot == std::string_view::npos) return static_cast<double>(*whole);
  if (number.substr(dot) != ".5") return 0;
  return static_cast<double>(*whole) + 0.5;
}

}  // namespace

StatusOr<Port> ReadPort(const SysfsDir& dev, uint32_t port_num, bool rnic) {
  RDMAK8S_ASSIGN_OR_RETURN(SysfsDir dir, dev.Sub("ports/" + std::to_string(port_num)));
  Port port;
  port.port_num = port_num;
  RDMAK8S_ASSIGN_OR_RETURN(PortLinkState link, internal::ReadPortLinkStateIn(dir));
  port.state = link.state;
  port.phys_state = link.phys_state;
  port.phys_state_name = std::move(link.phys_state_name);
  RDMAK8S_ASSIGN_OR_RETURN(port.link_layer, dir.Read("link_layer"));
  // rate_show() fails with EINVAL when the port reports an invalid speed (e.g. link down on
  // some drivers): no rate then.
  StatusOr<std::string> rate = dir.Read("rate");
  if (rate.ok()) {
    port.rate = std::move(rate).value();
    port.rate_gbps = RateGbps(port.rate);
  } else if (rate.status().code() != StatusCode::kNotFound &&
             rate.status().code() != StatusCode::kInvalidArgument) {
    return rate.status();
  }
  const bool ib = port.link_layer == "InfiniBand";
  if (ib) {
    auto num = [&](const char* attr, std::optional<uint32_t>* out) -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::string> text, dir.ReadOptional(attr));
      if (!text) return Status::Ok();
      RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(*text, dir.PathOf(attr)));
      *out = static_cast<uint32_t>(v);
      return Status::Ok();
    };
    RDMAK8S_RETURN_IF_ERROR(num("lid", &port.lid));
    RDMAK8S_RETURN_IF_ERROR(num("sm_lid", &port.sm_lid));
    RDMAK8S_RETURN_IF_ERROR(num("lid_mask_count", &port.lmc));
    StatusOr<std::vector<std::string>> pkeys = dir.List("pkeys");
    if (pkeys.ok()) {
      for (uint32_t i : NumericEntries(*pkeys)) {
        std::string rel = "pkeys/" + std::to_string(i);
        RDMAK8S_ASSIGN_OR_RETURN(std::string text, dir.Read(rel));
        RDMAK8S_ASSIGN_OR_RETURN(uint64_t v, ParseUint(text, dir.PathOf(rel)));
        if (v != 0) port.pkeys.push_back(static_cast<uint16_t>(v));
      }
    } else if (pkeys.status().code() != StatusCode::kNotFound) {
      return pkeys.status();
    }
  }
  StatusOr<std::vector<std::string>> gids = dir.List("gids");
  if (gids.ok()) {
    for (uint32_t i : NumericEntries(*gids)) {
      std::string idx = std::to_string(i);
      RDMAK8S_ASSIGN_OR_RETURN(std::string gid, dir.Read("gids/" + idx));
      if (IsZeroGid(gid)) continue;  // empty slot; its gid_attrs would fail with EINVAL
      GidEntry e;
      e.index = i;
      e.gid = std::move(gid);
      RDMAK8S_ASSIGN_OR_RETURN(std::string type, ReadGidAttr(dir, "gid_attrs/types/" + idx));
      // "IB/RoCE v1" means IB on an InfiniBand port and RoCE v1 on an Ethernet CA port; iWARP
      // (siw, irdma, cxgb4) and unknown link layers print it too, where it means neither.
      if (type == "IB/RoCE v1") {
        e.type = ib ? GidType::kIb
                    : (port.link_layer == "Ethernet" && !rnic ? GidType::kRoceV1 : GidType::kUnknown);
      } else if (type == "RoCE v2") {
        e.type = GidType::kRoceV2;
      } else if (type.empty() && ib) {
        e.type = GidType::kIb;
      }
      RDMAK8S_ASSIGN_OR_RETURN(e.netdev, ReadGidAttr(dir, "gid_attrs/ndevs/" + idx));
      port.gids.push_back(std::move(e));
    }
  } else if (gids.status().code() != StatusCode::kNotFound) {
    return gids.status();
  }
  return port;
}

}  // namespace rdmak8s::internal::discovery
