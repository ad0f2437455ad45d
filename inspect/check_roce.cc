#include "check_roce.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "check_dcb.h"
#include "check_device.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/device/gid_table.h"
#include "rdmak8s/device/roce_gid.h"

namespace rdmak8s::inspect {
namespace {

constexpr uint32_t kRoceHeaderBytes = 40 + 8 + 12 + 4 + 28 + 4;

// The netdev that carries the node-wide knobs (DCB, ECN): discovery's RdmaDevice::pf_netdev (the
// CNI's rule, pf_netdev.h), else the first port's netdev.
std::string PfNetdevOf(const RdmaDevice& dev) {
  if (!dev.pf_netdev.empty()) return dev.pf_netdev;
  for (const Port& p : dev.ports) {
    if (!p.netdevs.empty()) return p.netdevs.front();
  }
  return "";
}

void CheckMtu(const RdmaDevice& dev, const Port& port, const CheckEnv& env, CheckReport& report) {
  const std::string subject = PortSubject(dev, port);
  if (port.netdevs.empty()) {
    report.Add({subject, "mtu", Outcome::kFail, "no netdev", "", "",
                "a RoCE port without a netdev carries no traffic"});
    return;
  }
  const std::string& nd = port.netdevs.front();
  if (env.links == nullptr) {
    report.Add({subject, "mtu", Outcome::kSkip, "", "", "",
                "route netlink unavailable: " + env.route_error.ToString()});
    return;
  }
  auto link = env.links->GetLinkByName(nd);
  if (!link.ok()) {
    report.Add({subject, "mtu", Outcome::kFail, link.status().ToString(), "", "", ""});
    return;
  }
  uint32_t allows = RdmaMtuForNetdevMtu(link->mtu);
  std::string seen = nd + " mtu " + std::to_string(link->mtu) + " (room for RDMA MTU " +
                     std::to_string(allows) + ")";
  uint32_t active = 0, max = 0;
  if (dev.verbs) {
    for (const VerbsPortAttrs& v : dev.verbs->ports) {
      if (v.port_num == port.port_num) active = v.active_mtu, max = v.max_mtu;
    }
  }
  if (active == 0) {
    report.Add({subject, "mtu", Outcome::kSkip, seen, "", "",
                "active RDMA MTU unknown (libibverbs not queried or no answer)"});
    return;
  }
  CheckItem item{subject, "mtu", Outcome::kPass,
                 seen + ", active RDMA MTU " + std::to_string(active) +
                     (max ? ", port max " + std::to_string(max) : ""),
                 ">= " + std::to_string(NetdevMtuForRdmaMtu(active)), "", ""};
  if (allows < active) {
    item.outcome = Outcome::kFail;
    item.fix = "ip link set dev " + nd + " mtu " + std::to_string(NetdevMtuForRdmaMtu(active));
  }
  report.Add(std::move(item));
}

// The port's netdev MTU against the fabric's (--fabric-mtu): a node cannot see its peers' MTU,
// so only the admin's declaration shows a node whose MTU differs from the rest. Equal, not at
// least: a larger MTU sends frames the fabric (or a peer) drops. No line when nothing is declared.
void CheckFabricMtu(const RdmaDevice& dev, const Port& port, const CheckPolicy& policy,
                    const CheckEnv& env, CheckReport& report) {
  if (port.netdevs.empty()) return;  // CheckMtu says so
  const std::string& nd = port.netdevs.front();
  const std::optional<uint32_t> want = policy.fabric_mtu.For(nd);
  if (!want) return;
  const std::string subject = PortSubject(dev, port);
  const std::string want_text = std::to_string(*want) + " (--fabric-mtu)";
  if (env.links == nullptr) {
    report.Add({subject, "fabric mtu", Outcome::kFail, "", want_text, "",
                "route netlink unavailable: " + env.route_error.ToString()});
    return;
  }
  auto link = env.links->GetLinkByName(nd);
  if (!link.ok()) {
    report.Add({subject, "fabric mtu", Outcome::kFail, link.status().ToString(), want_text, "",
                ""});
    return;
  }
  CheckItem item{subject, "fabric mtu", Outcome::kPass,
                 nd + " mtu " + std::to_string(link->mtu), want_text, "", ""};
  if (link->mtu != *want) {
    item.outcome = Outcome::kFail;
    item.fix = "ip link set dev " + nd + " mtu " + std::to_string(*want) +
               " (every node of the fabric at the same MTU)";
    item.note = nd + " mtu " + std::to_string(link->mtu) + " differs from the fabric's " +
                std::to_string(*want) + ": RDMA MTU " +
                std::to_string(RdmaMtuForNetdevMtu(link->mtu)) + " here, " +
                std::to_string(RdmaMtuForNetdevMtu(*want)) + " on the other nodes";
  }
  report.Add(std::move(item));
}

void CheckGids(const RdmaDevice& dev, const Port& port, const CheckEnv& env, CheckReport& report) {
  const std::string subject = PortSubject(dev, port);
  if (env.links == nullptr || env.addresses == nullptr) {
    report.Add({subject, "roce v2 gids", Outcome::kSkip, "", "", "",
                "route netlink unavailable: " + env.route_error.ToString()});
    return;
  }
  std::vector<std::string> have, missing, errors;
  for (const std::string& nd : port.netdevs) {
    auto link = env.links->GetLinkByName(nd);
    if (!link.ok()) {
      // An upper device in a pod's netns (macvlan, exclusive mode) is not this netns's to see.
      if (link.status().code() != StatusCode::kNotFound) errors.push_back(link.status().ToString());
      continue;
    }
    auto addrs = env.addresses->ListAddresses(link->ifindex);
    if (!addrs.ok()) {
      errors.push_back(addrs.status().ToString());
      continue;
    }
    for (const IpAddress& a : *addrs) {
      std::string gid = GidForIp(a.address);
      if (gid.empty()) continue;
      // The model's GID table, matched by the one rule the CNI's wait uses (gid_table.h).
      bool found = std::any_of(port.gids.begin(), port.gids.end(), [&](const GidEntry& g) {
        return GidMatches(g, gid, GidType::kRoceV2);
      });
      (found ? have : missing).push_back(a.address + " (" + nd + ")");
    }
  }
  CheckItem item{subject, "roce v2 gids", Outcome::kPass,
                 have.empty() ? "none" : Join(have, ", "), "one per address", "", ""};
  if (!missing.empty() || !errors.empty()) {
    item.outcome = Outcome::kFail;
    std::vector<std::string> why;
    if (!missing.empty()) {
      why.push_back("no RoCE v2 GID for " + Join(missing, ", ") +
                    ": the kernel adds one when the address is on a netdev of the port; check `rdma "
                    "link show " + dev.name + "/" + std::to_string(port.port_num) +
                    "` names the netdev, then re-add the address");
    }
    for (const std::string& e : errors) why.push_back(e);
    item.fix = Join(why, "; ");
  } else if (have.empty()) {
    item.outcome = Outcome::kSkip;
    item.note = "the port's netdevs have no address here";
  }
  report.Add(std::move(item));
}

}  // namespace

uint32_t RdmaMtuForNetdevMtu(uint32_t netdev_mtu) {
  if (netdev_mtu < kRoceHeaderBytes + 256) return 0;
  uint32_t room = netdev_mtu - kRoceHeaderBytes;
  uint32_t m = 4096;
  while (m > 256 && m > room) m /= 2;
  return m;
}

uint32_t NetdevMtuForRdmaMtu(uint32_t rdma_mtu) { return rdma_mtu + kRoceHeaderBytes; }

void CheckRoceDevice(const RdmaDevice& dev, const CheckPolicy& policy, const CheckEnv& env,
                     CheckReport& report) {
  for (const Port& port : dev.ports) {
    const std::string nd = port.netdevs.empty() ? "<netdev>" : port.netdevs.front();
    CheckPortActive(dev, port,
                    "ip link set dev " + nd + " up; then the cable and the switch port (ethtool " +
                        nd + ")",
                    env, report);
  }
  const std::string pf = PfNetdevOf(dev);
  if (pf.empty()) {
    report.Add({dev.name, "dcb", Outcome::kFail, "no netdev", "", "",
                "no PF netdev found: DCB and ECN cannot be read"});
  } else {
    CheckDcb(dev, pf, policy, env, report);
  }
  for (const Port& port : dev.ports) {
    CheckMtu(dev, port, env, report);
    CheckFabricMtu(dev, port, policy, env, report);
    CheckGids(dev, port, env, report);
  }
  CheckCharDevices(dev, /*want_umad=*/false, env, report);
}

}  // namespace rdmak8s::inspect
