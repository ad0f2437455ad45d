#include "check_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "rdmak8s/base/strings.h"
#include "rdmak8s/device/port_usable.h"

namespace rdmak8s::inspect {
namespace {

// The module that makes the kernel create each kind of node.
const char* ModuleFor(CharDeviceKind kind) {
  switch (kind) {
    case CharDeviceKind::kUverbs: return "ib_uverbs";
    case CharDeviceKind::kUmad: return "ib_umad";
    case CharDeviceKind::kIssm: return "ib_umad";
    case CharDeviceKind::kRdmaCm: return "rdma_ucm";
  }
  return "ib_uverbs";
}

const char* KindName(CharDeviceKind kind) {
  switch (kind) {
    case CharDeviceKind::kUverbs: return "uverbs";
    case CharDeviceKind::kUmad: return "umad";
    case CharDeviceKind::kIssm: return "issm";
    case CharDeviceKind::kRdmaCm: return "rdma_cm";
  }
  return "?";
}

}  // namespace

std::string PortSubject(const RdmaDevice& dev, const Port& port) {
  return dev.name + " port " + std::to_string(port.port_num);
}

void CheckPortActive(const RdmaDevice& dev, const Port& port, const std::string& fix,
                     const CheckEnv& env, CheckReport& report) {
  const bool ethernet = dev.transport == Transport::kRoce || dev.transport == Transport::kIwarp;
  const std::string netdev = ethernet ? PortNetdev(dev, port) : "";
  const std::optional<bool> up =
      netdev.empty() ? std::nullopt : ReadNetdevUp(env.sysfs_root, netdev);
  const std::string why = PortUnusableReason(dev.transport, port, up, netdev);
  std::string seen = std::string(PortStateName(port.state)) +
                     (port.phys_state_name.empty() ? "" : " / " + port.phys_state_name);
  // value_or, not *up: gcc's -Wmaybe-uninitialized misreads optional<bool> here.
  const bool netdev_known = up.has_value();
  const bool netdev_down = !up.value_or(true);
  if (netdev_known) seen += ", netdev " + netdev + (netdev_down ? " down" : " up");
  CheckItem item{PortSubject(dev, port), "port state", Outcome::kPass, seen,
                 ethernet ? "ACTIVE / LinkUp, netdev up" : "ACTIVE / LinkUp", "", ""};
  if (!why.empty()) {
    item.outcome = Outcome::kFail;
    // Name what is wrong first: the caller's fix is for the link as a whole.
    if (port.state == PortState::kActive && netdev_down) {
      item.fix = why + ": ip link set dev " + netdev + " up";
    } else if (port.state == PortState::kActive) {
      item.fix = why + (fix.empty() ? "" : ": " + fix);
    } else {
      item.fix = fix;
    }
  }
  report.Add(std::move(item));
}

std::string CharDeviceProblem(const RdmaDevice& dev, CharDeviceKind kind, uint32_t port_num,
                              const CheckEnv& env) {
  const CharDevice* c = dev.FindCharDevice(kind, port_num);
  if (c == nullptr) {
    return std::string("no ") + KindName(kind) +
           (port_num ? " for port " + std::to_string(port_num) : "") + " in sysfs (modprobe " +
           ModuleFor(kind) + ")";
  }
  const std::string path = env.dev_root + "/infiniband/" + c->name;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return path + ": " + std::strerror(errno) + " (udev did not create it: udevadm trigger, or mknod " +
           path + " c " + std::to_string(c->major) + " " + std::to_string(c->minor) + ")";
  }
  if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != c->major || minor(st.st_rdev) != c->minor) {
    return path + " is not char device " + std::to_string(c->major) + ":" +
           std::to_string(c->minor) + " (remove it and run udevadm trigger)";
  }
  return "";
}

void CheckCharDevices(const RdmaDevice& dev, bool want_umad, const CheckEnv& env,
                      CheckReport& report) {
  std::vector<std::string> seen, problems;
  auto one = [&](CharDeviceKind kind, uint32_t port_num) {
    std::string p = CharDeviceProblem(dev, kind, port_num, env);
    if (!p.empty()) {
      problems.push_back(p);
    } else {
      seen.push_back(dev.FindCharDevice(kind, port_num)->name);
    }
  };
  one(CharDeviceKind::kUverbs, 0);
  one(CharDeviceKind::kRdmaCm, 0);
  if (want_umad) {
    for (const Port& p : dev.ports) one(CharDeviceKind::kUmad, p.port_num);
  }
  CheckItem item{dev.name, "char devices", problems.empty() ? Outcome::kPass : Outcome::kFail,
                 seen.empty() ? "none" : Join(seen, " "), "", "", ""};
  if (!problems.empty()) item.fix = Join(problems, "; ");
  report.Add(std::move(item));
}

}  // namespace rdmak8s::inspect
