#include "check_ib.h"

#include <cstdio>
#include <vector>

#include "check_device.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s::inspect {
namespace {

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

constexpr const char* kNoSm =
    "start a subnet manager on the fabric (systemctl start opensm on one node, or the switch's SM)";

}  // namespace

void CheckIbDevice(const RdmaDevice& dev, const CheckPolicy& policy, const CheckEnv& env,
                   CheckReport& report) {
  const std::set<uint16_t> pkeys = PkeysNeeded(policy);
  for (const Port& port : dev.ports) {
    // INIT / ARMED: the link is up but no SM has finished with the port yet.
    bool sm_pending = port.state == PortState::kInit || port.state == PortState::kArmed;
    CheckPortActive(dev, port,
                    sm_pending ? kNoSm
                               : "check the cable and the switch port (ibstat " + dev.name + " " +
                                     std::to_string(port.port_num) + ")",
                    env, report);
    const std::string subject = PortSubject(dev, port);
    uint32_t sm = port.sm_lid.value_or(0);
    CheckItem item{subject, "subnet manager", Outcome::kPass,
                   "sm_lid " + Hex(sm) + (port.lid ? ", lid " + Hex(*port.lid) : ""), "sm_lid set",
                   "", ""};
    if (sm == 0) {
      item.outcome = Outcome::kFail;
      item.fix = kNoSm;
    }
    report.Add(std::move(item));
    if (pkeys.empty()) continue;
    std::vector<std::string> have, missing;
    for (uint16_t want : pkeys) {
      bool found = false;
      for (uint16_t k : port.pkeys) found |= (k & 0x7fff) == want;
      (found ? have : missing).push_back(Hex(want));
    }
    std::vector<std::string> table;
    for (uint16_t k : port.pkeys) table.push_back(Hex(k));
    CheckItem pk{subject, "pkeys", missing.empty() ? Outcome::kPass : Outcome::kFail,
                 table.empty() ? "none" : Join(table, " "), Join(have.empty() ? missing : have, " "),
                 "", ""};
    if (!missing.empty()) {
      std::vector<std::string> all = have;
      all.insert(all.end(), missing.begin(), missing.end());
      pk.want = Join(all, " ");
      pk.fix = "add partition " + Join(missing, ", ") + " with this port (GUID " + dev.node_guid +
               ") to the SM's partition configuration (opensm: /etc/opensm/partitions.conf), "
               "then let the SM resweep";
    }
    report.Add(std::move(pk));
  }
  CheckCharDevices(dev, /*want_umad=*/true, env, report);
}

}  // namespace rdmak8s::inspect
