#include "check_dcb.h"

#include <optional>
#include <set>
#include <vector>

#include "rdmak8s/base/strings.h"
#include "rdmak8s/qos/qos_setting.h"

namespace rdmak8s::inspect {
namespace {

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

// What every step reads and where it writes: the device on its PF netdev, the policy's intent.
struct DcbCheck {
  const std::string& pf;
  const std::string subject;  // "mlx5_0 on eth0"
  const RoceIntent intent;
  const CheckPolicy& policy;
  const CheckEnv& env;
  CheckReport& report;

  std::string Unavailable() const { return "DCB netlink unavailable: " + env.dcb_error.ToString(); }
};

// The trust the policy asks for ("" when it names none); a line when its qos blocks disagree.
std::string WantedTrust(const DcbCheck& c) {
  if (c.intent.trusts.size() > 1) {
    c.report.Add({c.subject, "dcb trust", Outcome::kFail, "", "",
                  "the qos blocks disagree: give every NAD of this node the same qos.trust",
                  "policy asks for both dscp and pcp"});
    return "";
  }
  if (c.intent.trusts.size() == 1) return *c.intent.trusts.begin();
  if (!c.intent.dscps.empty() || !c.intent.dscp_to_priority.empty()) {
    return "dscp";  // a DSCP map classifies nothing unless the port trusts DSCP
  }
  return "";
}

// Trust: what classifies ingress traffic into priorities. Returns the trust in effect: the one
// seen, else the one wanted.
std::string CheckTrust(const DcbCheck& c) {
  const std::string want_trust = WantedTrust(c);
  if (c.env.trust == nullptr) {
    c.report.Add({c.subject, "dcb trust", Outcome::kSkip, "", want_trust, "", c.Unavailable()});
    return want_trust;
  }
  auto t = c.env.trust->GetTrust(c.pf);
  if (!t.ok()) {
    bool unsupported = t.status().code() == StatusCode::kUnimplemented;
    c.report.Add({c.subject, "dcb trust", unsupported ? Outcome::kSkip : Outcome::kFail,
                  t.status().ToString(), want_trust, "",
                  unsupported ? "no APP trust table here (Linux < 6.4, or the driver has none)"
                              : ""});
    return want_trust;
  }
  const std::string trust_seen = *t == DcbTrust::kDscp ? "dscp" : "pcp";
  CheckItem item{c.subject, "dcb trust", Outcome::kPass, trust_seen, want_trust, "", ""};
  if (want_trust.empty()) {
    item.outcome = Outcome::kSkip;
    item.note = "the policy names no trust";
  } else if (want_trust != trust_seen) {
    item.outcome = Outcome::kFail;
    item.fix = "dcb apptrust set dev " + c.pf + " order " +
               (want_trust == "dscp" ? "dscp pcp" : "pcp");
  }
  c.report.Add(std::move(item));
  return trust_seen;
}

// The node's APP table on the PF, or why it could not be read.
struct AppTable {
  std::optional<std::vector<DcbAppEntry>> entries;
  std::string error;
};

AppTable ReadAppTable(const DcbCheck& c) {
  if (c.env.app == nullptr) return {std::nullopt, c.Unavailable()};
  auto a = c.env.app->GetApp(c.pf);
  if (!a.ok()) return {std::nullopt, a.status().ToString()};
  return {*a, ""};
}

// The policy against itself: the ToS must land on a priority qos.pfc makes lossless.
void CheckTosAgainstPfc(const DcbCheck& c, uint8_t dscp, uint8_t prio) {
  const std::set<uint8_t>& pfc = c.intent.pfc;
  if (pfc.empty() || pfc.count(prio)) return;
  c.report.Add({c.subject, "tos vs pfc", Outcome::kFail,
                "DSCP " + std::to_string(dscp) + " -> priority " + std::to_string(prio),
                "a priority of qos.pfc (" + List(pfc) + ")",
                "map DSCP " + std::to_string(dscp) + " to one of " + List(pfc) +
                    " (qos.dscpToPriority), or add " + std::to_string(prio) + " to qos.pfc",
                "RoCE traffic would be lossy"});
}

// One DSCP RoCE sends: its APP entry against qos.dscpToPriority. Returns the priority it lands
// on: the node's entry, else the policy's, else the driver's default (DSCP >> 3).
uint8_t CheckDscpEntry(const DcbCheck& c, const AppTable& table, uint8_t d) {
  std::optional<uint8_t> node;
  if (table.entries) {
    for (const DcbAppEntry& e : *table.entries) {
      if (e.selector == kDcbAppSelDscp && e.protocol == d) node = e.priority;
    }
  }
  const auto want = c.intent.dscp_to_priority.find(d);
  const bool wanted = want != c.intent.dscp_to_priority.end();
  CheckItem item{c.subject, "dscp " + std::to_string(d) + " -> priority", Outcome::kPass, "",
                 wanted ? std::to_string(want->second) : "", "", ""};
  if (!table.entries) {
    item.outcome = Outcome::kSkip;
    item.seen = table.error;
  } else if (node) {
    item.seen = std::to_string(*node);
  } else {
    item.seen = "no APP entry";
  }
  const uint8_t prio = node ? *node : wanted ? want->second : static_cast<uint8_t>(d >> 3);
  if (table.entries && wanted && node != want->second) {
    item.outcome = Outcome::kFail;
    item.fix = "dcb app replace dev " + c.pf + " dscp-prio " + std::to_string(d) + ":" +
               std::to_string(want->second);
  } else if (table.entries && !node) {
    item.outcome = Outcome::kSkip;
    item.note = "the driver's default map applies (DSCP >> 3 on mlx5): priority " +
                std::to_string(prio) + " assumed";
  }
  c.report.Add(std::move(item));
  return prio;
}

// The priorities RoCE traffic uses under `trust`: with PCP, qos.pfc's (PCP comes from the VLAN
// egress map); with DSCP, its DSCPs through the node's APP table, each checked.
std::set<uint8_t> CheckRocePriorities(const DcbCheck& c, const std::string& trust) {
  if (trust == "pcp") return c.intent.pfc;
  std::set<uint8_t> roce_prios;
  if (!c.intent.any) return roce_prios;
  std::set<uint8_t> dscps = c.intent.dscps;
  if (dscps.empty()) dscps.insert(0);  // no ToS configured: RoCE sends DSCP 0
  const AppTable table = ReadAppTable(c);
  for (uint8_t d : dscps) {
    const uint8_t prio = CheckDscpEntry(c, table, d);
    roce_prios.insert(prio);
    CheckTosAgainstPfc(c, d, prio);
  }
  for (const std::string& conflict : c.intent.map_conflicts) {
    c.report.Add({c.subject, "dscp map", Outcome::kFail, conflict, "",
                  "give every NAD of this node the same qos.dscpToPriority", "policy conflict"});
  }
  return roce_prios;
}

// `required` on and the rest off unless --allow-pfc keeps them: "3:on", "5:off".
std::vector<std::string> PfcChanges(const DcbCheck& c, const std::set<uint8_t>& required,
                                    const std::set<uint8_t>& on) {
  std::vector<std::string> fixes;
  for (uint8_t p : required) {
    if (!on.count(p)) fixes.push_back(std::to_string(p) + ":on");
  }
  for (uint8_t p : on) {
    if (!required.count(p) && !c.policy.allow_pfc.count(p)) {
      fixes.push_back(std::to_string(p) + ":off");
    }
  }
  return fixes;
}

// PFC on the `required` priorities, off elsewhere unless allowed.
void CheckPfc(const DcbCheck& c, const std::set<uint8_t>& required) {
  const bool any = c.intent.any;
  const std::string want = any ? "on " + List(required) : "";
  const std::string no_policy = "no qos policy given (--qos, --qos-file)";
  if (c.env.pfc == nullptr) {
    c.report.Add({c.subject, "pfc", any ? Outcome::kFail : Outcome::kSkip, "", want, "",
                  c.Unavailable()});
    return;
  }
  auto s = c.env.pfc->GetPfc(c.pf);
  if (!s.ok()) {
    bool unsupported = s.status().code() == StatusCode::kUnimplemented;
    CheckItem item{c.subject, "pfc", any ? Outcome::kFail : Outcome::kSkip, s.status().ToString(),
                   want, "", ""};
    if (unsupported && any) {
      item.fix = c.pf + " has no DCB: PFC cannot be on; put RoCE on a NIC with DCB (or run it "
                        "lossy with ECN and drop qos.pfc)";
    }
    if (!any) item.note = no_policy;
    c.report.Add(std::move(item));
    return;
  }
  const std::set<uint8_t> on = Bits(s->enabled);
  CheckItem item{c.subject, "pfc", Outcome::kPass, "on " + List(on), want, "", ""};
  if (!any) {
    item.outcome = Outcome::kSkip;
    item.note = no_policy;
  } else if (std::vector<std::string> fixes = PfcChanges(c, required, on); !fixes.empty()) {
    item.outcome = Outcome::kFail;
    item.fix = "dcb pfc set dev " + c.pf + " prio-pfc " + Join(fixes, " ") +
               " (a priority kept on on purpose: --allow-pfc)";
  }
  c.report.Add(std::move(item));
}

// ECN on priority `p` (mlx5: class/net/<pf>/ecn/roce_{rp,np}/enable/<prio>), both reaction and
// notification points, read as the CNI reads them.
void CheckEcnPriority(const DcbCheck& c, const QosSettingContext& settings, uint8_t p) {
  std::vector<std::string> off, seen;
  bool unsupported = false;
  std::string error;
  for (EcnPoint point : {EcnPoint::kRp, EcnPoint::kNp}) {
    const QosSetting setting = EcnSetting{c.pf, point, p};
    const char* side = point == EcnPoint::kRp ? "rp" : "np";
    auto v = setting.Read(settings);
    if (!v.ok()) {
      if (v.status().code() == StatusCode::kUnimplemented) unsupported = true;
      else error = v.status().ToString();
      continue;
    }
    seen.push_back(std::string(side) + "=" + *v);
    if (*v != "1") off.push_back("echo 1 > " + setting.FilePath(settings));
  }
  const std::string check = "ecn priority " + std::to_string(p);
  if (unsupported) {
    c.report.Add({c.subject, check, Outcome::kSkip, "", "rp=1 np=1", "",
                  "the driver exposes no ECN knob (class/net/" + c.pf + "/ecn)"});
  } else if (!error.empty()) {
    c.report.Add({c.subject, check, Outcome::kFail, error, "rp=1 np=1", "", ""});
  } else {
    c.report.Add({c.subject, check, off.empty() ? Outcome::kPass : Outcome::kFail,
                  Join(seen, " "), "rp=1 np=1", Join(off, "; "), ""});
  }
}

}  // namespace

void CheckDcb(const RdmaDevice& dev, const std::string& pf, const CheckPolicy& policy,
              const CheckEnv& env, CheckReport& report) {
  const DcbCheck c{pf, dev.name + " on " + pf, RoceIntentOf(policy), policy, env, report};
  const std::string trust = CheckTrust(c);
  // PFC on the RoCE priorities and qos.pfc's; ECN on those and qos.ecn's.
  std::set<uint8_t> required = CheckRocePriorities(c, trust);
  required.insert(c.intent.pfc.begin(), c.intent.pfc.end());
  CheckPfc(c, required);
  std::set<uint8_t> ecn = required;
  ecn.insert(c.intent.ecn.begin(), c.intent.ecn.end());
  QosSettingContext settings;
  settings.sysfs_root = env.sysfs_root;
  for (uint8_t p : ecn) CheckEcnPriority(c, settings, p);
}

}  // namespace rdmak8s::inspect
