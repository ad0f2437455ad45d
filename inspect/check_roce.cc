#include "check_roce.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "check_device.h"
#include "rdmak8s/gid_table.h"
#include "rdmak8s/qos_setting.h"
#include "rdmak8s/roce_gid.h"
#include "rdmak8s/strings.h"

namespace rdmak8s::inspect {
namespace {

constexpr uint32_t kRoceHeaderBytes = 40 + 8 + 12 + 4 + 28 + 4;

std::string List(const std::set<uint8_t>& s) {
  if (s.empty()) return "none";
  std::vector<std::string> v;
  for (uint8_t p : s) v.push_back(std::to_string(p));
  return Join(v, ",");
}

std::set<uint8_t> Bits(uint8_t mask) {
  std::set<uint8_t> s;
  for (uint8_t p = 0; p < 8; ++p) {
    if ((mask >> p) & 1) s.insert(p);
  }
  return s;
}

// The netdev that carries the node-wide knobs (DCB, ECN): discovery's RdmaDevice::pf_netdev (the
// CNI's rule, pf_netdev.h), else the first port's netdev.
std::string PfNetdevOf(const RdmaDevice& dev) {
  if (!dev.pf_netdev.empty()) return dev.pf_netdev;
  for (const Port& p : dev.ports) {
    if (!p.netdevs.empty()) return p.netdevs.front();
  }
  return "";
}

// The node-wide part: trust, DSCP map, PFC, ECN on `pf`. Returns nothing; adds lines.
void CheckDcb(const RdmaDevice& dev, const std::string& pf, const CheckPolicy& policy,
              const CheckEnv& env, CheckReport& report) {
  const RoceIntent intent = RoceIntentOf(policy);
  const std::string subject = dev.name + " on " + pf;

  // Trust: what classifies ingress traffic into priorities.
  std::string want_trust;
  if (intent.trusts.size() > 1) {
    report.Add({subject, "dcb trust", Outcome::kFail, "", "",
                "the qos blocks disagree: give every NAD of this node the same qos.trust",
                "policy asks for both dscp and pcp"});
  } else if (intent.trusts.size() == 1) {
    want_trust = *intent.trusts.begin();
  } else if (!intent.dscps.empty() || !intent.dscp_to_priority.empty()) {
    want_trust = "dscp";  // a DSCP map classifies nothing unless the port trusts DSCP
  }
  std::string trust_seen;
  if (env.trust == nullptr) {
    report.Add({subject, "dcb trust", Outcome::kSkip, "", want_trust, "",
                "DCB netlink unavailable: " + env.dcb_error.ToString()});
  } else if (auto t = env.trust->GetTrust(pf); !t.ok()) {
    bool unsupported = t.status().code() == StatusCode::kUnimplemented;
    report.Add({subject, "dcb trust", unsupported ? Outcome::kSkip : Outcome::kFail,
                t.status().ToString(), want_trust, "",
                unsupported ? "no APP trust table here (Linux < 6.4, or the driver has none)" : ""});
  } else {
    trust_seen = *t == DcbTrust::kDscp ? "dscp" : "pcp";
    CheckItem item{subject, "dcb trust", Outcome::kPass, trust_seen, want_trust, "", ""};
    if (want_trust.empty()) {
      item.outcome = Outcome::kSkip;
      item.note = "the policy names no trust";
    } else if (want_trust != trust_seen) {
      item.outcome = Outcome::kFail;
      item.fix = "dcb apptrust set dev " + pf + " order " +
                 (want_trust == "dscp" ? "dscp pcp" : "pcp");
    }
    report.Add(std::move(item));
  }
  const std::string trust = !trust_seen.empty() ? trust_seen : want_trust;

  // The priorities RoCE traffic uses: its DSCP through the node's APP table.
  std::set<uint8_t> roce_prios;
  if (trust == "pcp") {
    roce_prios = intent.pfc;  // PCP comes from the VLAN egress map: qos.pfc says which
  } else if (intent.any) {
    std::set<uint8_t> dscps = intent.dscps;
    if (dscps.empty()) dscps.insert(0);  // no ToS configured: RoCE sends DSCP 0
    std::optional<std::vector<DcbAppEntry>> table;
    std::string table_error;
    if (env.app == nullptr) {
      table_error = "DCB netlink unavailable: " + env.dcb_error.ToString();
    } else if (auto a = env.app->GetApp(pf); a.ok()) {
      table = *a;
    } else {
      table_error = a.status().ToString();
    }
    for (uint8_t d : dscps) {
      std::optional<uint8_t> node;
      if (table) {
        for (const DcbAppEntry& e : *table) {
          if (e.selector == kDcbAppSelDscp && e.protocol == d) node = e.priority;
        }
      }
      auto want = intent.dscp_to_priority.find(d);
      CheckItem item{subject, "dscp " + std::to_string(d) + " -> priority", Outcome::kPass, "",
                     want == intent.dscp_to_priority.end() ? "" : std::to_string(want->second),
                     "", ""};
      if (!table) {
        item.outcome = Outcome::kSkip;
        item.seen = table_error;
      } else if (node) {
        item.seen = std::to_string(*node);
      } else {
        item.seen = "no APP entry";
      }
      uint8_t prio = node ? *node
                          : want != intent.dscp_to_priority.end() ? want->second
                                                                  : static_cast<uint8_t>(d >> 3);
      if (table && want != intent.dscp_to_priority.end() && node != want->second) {
        item.outcome = Outcome::kFail;
        item.fix = "dcb app replace dev " + pf + " dscp-prio " + std::to_string(d) + ":" +
                   std::to_string(want->second);
      } else if (table && !node) {
        item.outcome = Outcome::kSkip;
        item.note = "the driver's default map applies (DSCP >> 3 on mlx5): priority " +
                    std::to_string(prio) + " assumed";
      }
      report.Add(std::move(item));
      roce_prios.insert(prio);
      // The policy against itself: the ToS must land on a priority qos.pfc makes lossless.
      if (!intent.pfc.empty() && !intent.pfc.count(prio)) {
        report.Add({subject, "tos vs pfc", Outcome::kFail,
                    "DSCP " + std::to_string(d) + " -> priority " + std::to_string(prio),
                    "a priority of qos.pfc (" + List(intent.pfc) + ")",
                    "map DSCP " + std::to_string(d) + " to one of " + List(intent.pfc) +
                        " (qos.dscpToPriority), or add " + std::to_string(prio) + " to qos.pfc",
                    "RoCE traffic would be lossy"});
      }
    }
    for (const std::string& c : intent.map_conflicts) {
      report.Add({subject, "dscp map", Outcome::kFail, c, "", 
                  "give every NAD of this node the same qos.dscpToPriority", "policy conflict"});
    }
  }

  // PFC on the RoCE priorities (and qos.pfc), off elsewhere unless allowed.
  std::set<uint8_t> required = roce_prios;
  required.insert(intent.pfc.begin(), intent.pfc.end());
  if (env.pfc == nullptr) {
    report.Add({subject, "pfc", intent.any ? Outcome::kFail : Outcome::kSkip, "",
                intent.any ? "on " + List(required) : "", "",
                "DCB netlink unavailable: " + env.dcb_error.ToString()});
  } else if (auto s = env.pfc->GetPfc(pf); !s.ok()) {
    bool unsupported = s.status().code() == StatusCode::kUnimplemented;
    CheckItem item{subject, "pfc", intent.any ? Outcome::kFail : Outcome::kSkip,
                   s.status().ToString(), intent.any ? "on " + List(required) : "", "", ""};
    if (unsupported && intent.any) {
      item.fix = pf + " has no DCB: PFC cannot be on; put RoCE on a NIC with DCB (or run it "
                 "lossy with ECN and drop qos.pfc)";
    }
    if (!intent.any) item.note = "no qos policy given (--qos, --qos-file)";
    report.Add(std::move(item));
  } else {
    std::set<uint8_t> on = Bits(s->enabled);
    CheckItem item{subject, "pfc", Outcome::kPass, "on " + List(on),
                   intent.any ? "on " + List(required) : "", "", ""};
    if (!intent.any) {
      item.outcome = Outcome::kSkip;
      item.note = "no qos policy given (--qos, --qos-file)";
    } else {
      std::vector<std::string> fixes;
      for (uint8_t p : required) {
        if (!on.count(p)) fixes.push_back(std::to_string(p) + ":on");
      }
      for (uint8_t p : on) {
        if (!required.count(p) && !policy.allow_pfc.count(p)) fixes.push_back(std::to_string(p) + ":off");
      }
      if (!fixes.empty()) {
        item.outcome = Outcome::kFail;
        item.fix = "dcb pfc set dev " + pf + " prio-pfc " + Join(fixes, " ") +
                   " (a priority kept on on purpose: --allow-pfc)";
      }
    }
    report.Add(std::move(item));
  }

  // ECN (mlx5: class/net/<pf>/ecn/roce_{rp,np}/enable/<prio>), read as the CNI reads it.
  std::set<uint8_t> ecn = required;
  ecn.insert(intent.ecn.begin(), intent.ecn.end());
  QosSettingContext knobs;
  knobs.sysfs_root = env.sysfs_root;
  for (uint8_t p : ecn) {
    std::vector<std::string> off, seen;
    bool unsupported = false;
    std::string error;
    for (EcnPoint point : {EcnPoint::kRp, EcnPoint::kNp}) {
      const QosSetting setting = EcnSetting{pf, point, p};
      const char* side = point == EcnPoint::kRp ? "rp" : "np";
      auto v = setting.Read(knobs);
      if (!v.ok()) {
        if (v.status().code() == StatusCode::kUnimplemented) unsupported = true;
        else error = v.status().ToString();
        continue;
      }
      seen.push_back(std::string(side) + "=" + *v);
      if (*v != "1") off.push_back("echo 1 > " + setting.FilePath(knobs));
    }
    const std::string check = "ecn priority " + std::to_string(p);
    if (unsupported) {
      report.Add({subject, check, Outcome::kSkip, "", "rp=1 np=1", "",
                  "the driver exposes no ECN knob (class/net/" + pf + "/ecn)"});
    } else if (!error.empty()) {
      report.Add({subject, check, Outcome::kFail, error, "rp=1 np=1", "", ""});
    } else {
      report.Add({subject, check, off.empty() ? Outcome::kPass : Outcome::kFail, Join(seen, " "),
                  "rp=1 np=1", Join(off, "; "), ""});
    }
  }
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
