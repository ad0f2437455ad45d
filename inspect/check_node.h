// The node-wide checks: the RDMA netns mode against the configured pools and netconfs, the
// container runtime's RLIMIT_MEMLOCK (pods inherit it: memory registration fails without it),
// and hugepages when the policy asks for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check_env.h"
#include "check_policy.h"
#include "check_result.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::inspect {

// Exclusive pools (and netconfs with netnsMode "exclusive") need exclusive mode, shared ones
// shared; both in one policy is a ✘ of the policy itself. Read through env.rdma (RDMA netlink,
// RDMA_NLDEV_CMD_SYS_GET).
void CheckNetnsMode(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report);

// Each process in <proc_root> that is a runtime of policy.runtimes: the soft "Max locked memory"
// of its limits must be unlimited (or >= memlock_min_bytes). A process is the runtime only when
// its executable (the <pid>/exe link, which only an exec changes) is the runtime's
// (IsRuntimeExecutable) and it is root's (real and effective uid 0 in <pid>/status): its comm
// alone proves nothing, any local user can start a process named "containerd" with a low limit.
// None found is a – naming the names and the processes that looked like one but were not trusted.
void CheckMemlock(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report);

// Whether `exe` (a /proc/<pid>/exe link's target, " (deleted)" allowed) is one of `runtimes`: an
// entry starting with '/' is the executable's whole path, any other its file name ("containerd"
// matches /usr/bin/containerd and /usr/local/bin/containerd).
bool IsRuntimeExecutable(std::string_view exe, const std::vector<std::string>& runtimes);

// The real and effective uid of the "Uid:" line of a /proc/<pid>/status text (real, effective,
// saved, filesystem); nullopt when there is none or it does not parse.
struct ProcessUids {
  uint64_t real = 0;
  uint64_t effective = 0;
};
std::optional<ProcessUids> ParseStatusUids(const std::string& status_text);

// "Max locked memory" soft limit from the text of /proc/<pid>/limits: nullopt for unlimited;
// kNotFound when the line is missing, kInvalidArgument when it does not parse.
StatusOr<std::optional<uint64_t>> ParseMemlockSoftLimit(const std::string& limits_text);

// <sysfs_root>/kernel/mm/hugepages/hugepages-<kB>kB/nr_hugepages >= count, for each need.
void CheckHugepages(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report);

}  // namespace rdmak8s::inspect
