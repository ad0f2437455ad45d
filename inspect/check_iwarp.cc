#include "check_iwarp.h"

#include "check_device.h"

namespace rdmak8s::inspect {

void CheckIwarpDevice(const RdmaDevice& dev, const CheckEnv& env, CheckReport& report) {
  for (const Port& port : dev.ports) {
    const std::string nd = port.netdevs.empty() ? "<netdev>" : port.netdevs.front();
    CheckPortActive(dev, port, "ip link set dev " + nd + " up; then the cable and the switch port",
                    env, report);
  }
  std::string problem = CharDeviceProblem(dev, CharDeviceKind::kRdmaCm, 0, env);
  report.Add({dev.name, "rdma_cm", problem.empty() ? Outcome::kPass : Outcome::kFail,
              problem.empty() ? "/dev/infiniband/rdma_cm" : "missing", "present", problem,
              "iWARP connects only through rdma_cm"});
  report.Add({dev.name, "pfc", Outcome::kSkip, "", "", "",
              "iWARP runs over TCP: no PFC needed"});
  CheckCharDevices(dev, /*want_umad=*/false, env, report);
}

}  // namespace rdmak8s::inspect
