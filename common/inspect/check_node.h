// The node-wide checks: the RDMA netns mode against the configured pools and netconfs, the
// container runtime's RLIMIT_MEMLOCK (pods inherit it: memory registration fails without it),
// and hugepages when the policy asks for them.
#pragma once

#include <optional>
#include <string>

#include "check_env.h"
#include "check_policy.h"
#include "check_result.h"
#include "rdmak8s/status.h"

namespace rdmak8s::inspect {

// Exclusive pools (and netconfs with netnsMode "exclusive") need exclusive mode, shared ones
// shared; both in one policy is a ✘ of the policy itself. Read through env.rdma (RDMA netlink,
// RDMA_NLDEV_CMD_SYS_GET).
void CheckNetnsMode(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report);

// Each process in <proc_root> whose comm is one of policy.runtimes: the soft "Max locked memory"
// of its limits must be unlimited (or >= memlock_min_bytes). None found is a – naming the names.
void CheckMemlock(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report);

// "Max locked memory" soft limit from the text of /proc/<pid>/limits: nullopt for unlimited;
// kNotFound when the line is missing, kInvalidArgument when it does not parse.
StatusOr<std::optional<uint64_t>> ParseMemlockSoftLimit(const std::string& limits_text);

// <sysfs_root>/kernel/mm/hugepages/hugepages-<kB>kB/nr_hugepages >= count, for each need.
void CheckHugepages(const CheckPolicy& policy, const CheckEnv& env, CheckReport& report);

}  // namespace rdmak8s::inspect
