// rdmak8s-inspect check: is this node ready for RDMA pods? For every RDMA device the checks of
// its transport (check_roce.h, check_ib.h, check_iwarp.h), then the node's (check_node.h),
// judged against the policy (check_policy.h) and printed as check_result.h says.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "check_env.h"
#include "check_policy.h"
#include "check_result.h"

namespace rdmak8s::inspect {

// Runs discovery through env.discovery, then every check. A discovery that fails is a ✘ line
// (the node cannot be judged), as is each device discovery could not read; an unknown transport
// gets only the checks every device gets (ports, char devices).
CheckReport RunChecks(const CheckPolicy& policy, const CheckEnv& env);

// The policy's inputs as the command line gives them.
struct CheckInputs {
  std::string config_path;               // --config: the device plugin's config file
  std::vector<std::string> qos;          // --qos, each a netconf or a qos block
  std::vector<std::string> qos_files;    // --qos-file
  std::vector<int> allow_pfc;            // --allow-pfc
  std::vector<std::string> runtimes;     // --runtime; empty: containerd, crio
  std::string memlock_min;               // --memlock-min: bytes, or "unlimited" (default)
  std::vector<std::string> hugepages;    // --hugepages
  std::vector<std::string> fabric_mtu;   // --fabric-mtu, each [<netdev>=]<mtu>
};

// Loads the inputs with the project's parsers (dp::LoadConfigFile, cni::ParseNetConf).
// kInvalidArgument / the read error naming the flag and the input on any problem.
StatusOr<CheckPolicy> LoadPolicy(const CheckInputs& inputs);

// The verb: load the policy (a bad input is written to `err` and returns kCheckUsage), run the
// checks, print the report (JSON when `json`) to `out`; kCheckPassed or kCheckFailed.
int RunCheckCommand(const CheckInputs& inputs, bool json, const CheckEnv& env, std::ostream& out,
                    std::ostream& err);

}  // namespace rdmak8s::inspect
