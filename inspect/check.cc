#include "check.h"


#include "check_device.h"
#include "check_ib.h"
#include "check_iwarp.h"
#include "check_node.h"
#include "check_roce.h"
#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/numbers.h"

namespace rdmak8s::inspect {

CheckReport RunChecks(const CheckPolicy& policy, const CheckEnv& env) {
  CheckReport report;
  StatusOr<DiscoveryResult> found = env.discovery->DiscoverAll();
  if (!found.ok()) {
    report.Add({"node", "discovery", Outcome::kFail, found.status().ToString(), "", "", ""});
  } else if (!found->rdma_present || found->devices.empty()) {
    report.Add({"node", "rdma devices", Outcome::kFail,
                found->rdma_present ? "none registered" : "no RDMA core (no class/infiniband)",
                "at least one", "load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, ...)", ""});
  } else {
    for (const DeviceFailure& f : found->failures) {
      report.Add({f.rdma_dev.empty() ? "node" : f.rdma_dev, "discovery", Outcome::kFail,
                  f.status.ToString(), "", "", ""});
    }
    for (const RdmaDevice& dev : found->devices) {
      switch (dev.transport) {
        case Transport::kRoce: CheckRoceDevice(dev, policy, env, report); break;
        case Transport::kIb: CheckIbDevice(dev, policy, env, report); break;
        case Transport::kIwarp: CheckIwarpDevice(dev, env, report); break;
        case Transport::kUnknown:
          for (const Port& p : dev.ports) CheckPortActive(dev, p, "", env, report);
          CheckCharDevices(dev, /*want_umad=*/false, env, report);
          break;
      }
    }
  }
  CheckNetnsMode(policy, env, report);
  CheckMemlock(policy, env, report);
  CheckHugepages(policy, env, report);
  return report;
}

StatusOr<CheckPolicy> LoadPolicy(const CheckInputs& in) {
  CheckPolicy policy;
  if (!in.config_path.empty()) {
    auto cfg = dp::LoadConfigFile(in.config_path);
    if (!cfg.ok()) return cfg.status().Prepend("--config");
    policy.plugin_config = std::move(*cfg);
  }
  for (size_t i = 0; i < in.qos.size(); ++i) {
    RDMAK8S_ASSIGN_OR_RETURN(cni::NetConf nc,
                             ParseQosArg(in.qos[i], "qos-" + std::to_string(i + 1)));
    policy.netconfs.push_back(std::move(nc));
  }
  for (const std::string& path : in.qos_files) {
    // An admin's file (a ConfigMap's link into ..data/ is followed); a FIFO or a huge file at
    // the path is refused, never read or waited on.
    StatusOr<std::string> text = ReadConfigFile(path);
    if (!text.ok()) return text.status().Prepend("--qos-file " + path);
    auto nc = ParseQosArg(*text, "qos-file-" + std::to_string(policy.netconfs.size() + 1));
    if (!nc.ok()) return nc.status().Prepend("--qos-file " + path);
    policy.netconfs.push_back(std::move(*nc));
  }
  for (int p : in.allow_pfc) {
    if (p < 0 || p > 7) return InvalidArgumentError("--allow-pfc " + std::to_string(p) + ": not a priority 0..7");
    policy.allow_pfc.insert(static_cast<uint8_t>(p));
  }
  if (!in.runtimes.empty()) policy.runtimes = in.runtimes;
  if (!in.memlock_min.empty() && in.memlock_min != "unlimited") {
    StatusOr<uint64_t> v = ParseUnsigned<uint64_t>(in.memlock_min, "--memlock-min");
    if (!v.ok()) {
      return InvalidArgumentError("--memlock-min \"" + in.memlock_min + "\": bytes, or unlimited");
    }
    policy.memlock_min_bytes = *v;
  }
  for (const std::string& h : in.hugepages) {
    RDMAK8S_ASSIGN_OR_RETURN(HugepageNeed need, ParseHugepageNeed(h));
    policy.hugepages.push_back(need);
  }
  for (const std::string& m : in.fabric_mtu) {
    RDMAK8S_RETURN_IF_ERROR(ParseFabricMtu(m, policy.fabric_mtu));
  }
  return policy;
}

int RunCheckCommand(const CheckInputs& inputs, bool json, const CheckEnv& env, std::ostream& out,
                    std::ostream& err) {
  auto policy = LoadPolicy(inputs);
  if (!policy.ok()) {
    err << "rdmak8s-inspect check: " << policy.status().ToString() << "\n";
    return kCheckUsage;
  }
  CheckReport report = RunChecks(*policy, env);
  if (json) {
    out << ReportToJson(report).dump(2) << "\n";
  } else {
    out << FormatReport(report);
  }
  return report.AllPassed() ? kCheckPassed : kCheckFailed;
}

}  // namespace rdmak8s::inspect
