// Discovery's port reader: state, rate, LIDs, PKeys, and the GID table (through gid_table.h).
#include "discovery/discovery_ports.h"

#include <string>

#include "discovery/discovery_context.h"
#include "rdmak8s/device/gid_table.h"

namespace rdmak8s::internal::discovery {

using internal::ParseUint;

namespace {

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
  // The one GID slot reader (gid_table.h): the type rule by this port's link layer.
  StatusOr<std::vector<GidEntry>> gids = GidTable::OfPort(dir, port.link_layer, rnic).ReadAll();
  if (gids.ok()) {
    port.gids = std::move(gids).value();
  } else if (gids.status().code() != StatusCode::kNotFound) {
    return gids.status();
  }
  return port;
}

}  // namespace rdmak8s::internal::discovery
