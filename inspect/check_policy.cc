#include "check_policy.h"

#include <algorithm>
#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/numbers.h"

namespace rdmak8s::inspect {

using nlohmann::json;

StatusOr<cni::NetConf> ParseQosArg(const std::string& text, const std::string& bare_name) {
  // The strict reader's shape: "--qos: not JSON", "--qos: not an object (array)".
  StatusOr<json> parsed = json_reader::Parse(text, "--qos");
  if (!parsed.ok()) return InvalidArgumentError("--qos: not JSON: " + text);
  const json& j = *parsed;
  RDMAK8S_RETURN_IF_ERROR(json_reader::RequireObject(j, "--qos"));
  std::string conf = text;
  if (!j.contains("cniVersion")) {
    // A bare qos block: the netconf around it is the least the CNI's parser accepts.
    json wrapped = {{"cniVersion", "1.0.0"}, {"name", bare_name}, {"type", "rdmak8s"},
                    {"qos", j}};
    conf = wrapped.dump();
  }
  cni::CniError err;
  std::optional<cni::NetConf> nc = cni::ParseNetConf(conf, cni::Command::kCheck, &err);
  if (!nc) return InvalidArgumentError("--qos: " + err.msg);
  return *nc;
}

StatusOr<HugepageNeed> ParseHugepageNeed(const std::string& text) {
  const auto bad = [&] {
    return InvalidArgumentError("--hugepages \"" + text +
                                "\": want <size>=<count>, size like 2M, 1G or 2048kB");
  };
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return bad();
  std::string size = text.substr(0, eq), count = text.substr(eq + 1);
  size_t digits = 0;
  while (digits < size.size() && std::isdigit(static_cast<unsigned char>(size[digits]))) ++digits;
  // Bounded so that the size in kB cannot overflow and a count is a count of pages, not a typo.
  StatusOr<uint64_t> n = ParseUnsignedInRange(size.substr(0, digits), "--hugepages size", 0, 999999999);
  StatusOr<uint64_t> pages = ParseUnsignedInRange(count, "--hugepages count", 0, 999999999999);
  if (!n.ok() || !pages.ok()) return bad();
  std::string unit = size.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  uint64_t kb = 0;
  if (unit == "k" || unit == "kb") kb = *n;
  else if (unit == "m" || unit == "mb") kb = *n * 1024;
  else if (unit == "g" || unit == "gb") kb = *n * 1024 * 1024;
  else return bad();
  return HugepageNeed{kb, *pages};
}

std::optional<uint32_t> FabricMtu::For(const std::string& netdev) const {
  auto it = by_netdev.find(netdev);
  if (it != by_netdev.end()) return it->second;
  return all;
}

Status ParseFabricMtu(const std::string& text, FabricMtu& into) {
  const auto bad = [&](const std::string& why) {
    return InvalidArgumentError("--fabric-mtu \"" + text + "\": " + why);
  };
  const size_t eq = text.rfind('=');
  const std::string netdev = eq == std::string::npos ? "" : text.substr(0, eq);
  const std::string mtu = eq == std::string::npos ? text : text.substr(eq + 1);
  if (eq != std::string::npos && netdev.empty()) return bad("want [<netdev>=]<mtu>");
  // IFNAMSIZ - 1 bytes, no '/' or whitespace: what the kernel's dev_valid_name takes.
  if (netdev.size() > 15 || netdev.find_first_of("/ \t\n:") != std::string::npos) {
    return bad("\"" + netdev + "\" is not a netdev name");
  }
  StatusOr<uint64_t> parsed = ParseUnsigned<uint64_t>(mtu, "mtu");
  if (!parsed.ok()) return bad("want [<netdev>=]<mtu>, mtu a number");
  if (*parsed < 68 || *parsed > 65535) return bad("mtu " + mtu + " outside 68..65535");
  const auto value = static_cast<uint32_t>(*parsed);
  if (netdev.empty()) {
    if (into.all && *into.all != value) return bad("a second fabric MTU for every netdev");
    into.all = value;
  } else {
    auto [it, fresh] = into.by_netdev.try_emplace(netdev, value);
    if (!fresh && it->second != value) return bad("a second fabric MTU for " + netdev);
  }
  return Status::Ok();
}

RoceIntent RoceIntentOf(const CheckPolicy& policy) {
  RoceIntent r;
  std::map<uint8_t, std::string> map_owner;
  for (const cni::NetConf& nc : policy.netconfs) {
    const QosPolicy& q = nc.qos;
    if (q.empty()) continue;
    r.any = true;
    if (q.trust) r.trusts.insert(*q.trust);
    // RoCE v2 carries the ToS byte (rdma_cm) or the GRH traffic class (verbs) in the IP header:
    // its upper six bits are the DSCP.
    if (q.roce_tos) r.dscps.insert(static_cast<uint8_t>(*q.roce_tos >> 2));
    if (q.traffic_class) r.dscps.insert(static_cast<uint8_t>(*q.traffic_class >> 2));
    for (auto [d, p] : q.dscp_to_priority) {
      auto [it, fresh] = r.dscp_to_priority.try_emplace(d, p);
      if (fresh) {
        map_owner[d] = nc.name;
      } else if (it->second != p) {
        r.map_conflicts.push_back("DSCP " + std::to_string(d) + " -> " +
                                  std::to_string(it->second) + " (" + map_owner[d] + ") and -> " +
                                  std::to_string(p) + " (" + nc.name + ")");
      }
    }
    r.pfc.insert(q.pfc.begin(), q.pfc.end());
    r.ecn.insert(q.ecn.begin(), q.ecn.end());
  }
  return r;
}

std::set<uint16_t> PkeysNeeded(const CheckPolicy& policy) {
  std::set<uint16_t> out;
  for (const cni::NetConf& nc : policy.netconfs) {
    if (nc.pkey) out.insert(static_cast<uint16_t>(*nc.pkey & 0x7fff));
  }
  return out;
}

}  // namespace rdmak8s::inspect
