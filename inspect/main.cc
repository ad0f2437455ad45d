// rdmak8s-inspect: every RDMA device on this host (or under --sysfs-root) with its ports, GIDs,
// netdevs, PCI/NUMA placement and character devices; `rdmak8s-inspect check`: whether the node
// is ready for RDMA pods (docs/node-check.md). Flags -> options -> inspect::Run / RunCheckCommand.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "check.h"
#include "inspect.h"
#include "rdmak8s/base/command_line.h"
#include "rdmak8s/base/path_flag.h"
#include "rdmak8s/discovery/discovery.h"
#include "rdmak8s/discovery/verbs.h"
#include "rdmak8s/netlink/dcb_netlink.h"
#include "rdmak8s/netlink/rdma_netlink.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace {

using namespace rdmak8s;

// `rdmak8s-inspect` (discovery): what its flags say.
struct DiscoveryFlags {
  inspect::Options options;
  bool no_verbs = false;
};

// `rdmak8s-inspect check`: what its flags say, and the seams it reads through.
struct CheckFlags {
  inspect::CheckInputs inputs;
  inspect::CheckEnv env;
  bool json = false;
  bool no_verbs = false;
};

void AddDiscoveryFlags(CLI::App& app, DiscoveryFlags& f) {
  app.add_flag("--json", f.options.json, "print JSON, one object per device");
  app.add_option("--sysfs-root", f.options.sysfs_root, "sysfs tree to inspect (default /sys)")
    ->transform(AbsolutePath());
  app.add_flag("--no-verbs", f.no_verbs, "do not query libibverbs (sysfs only)");
}

// The `check` subcommand and its flags.
CLI::App* AddCheckCommand(CLI::App& app, CheckFlags& f) {
  CLI::App* check = app.add_subcommand(
      "check", "is this node ready for RDMA pods: the checks each device's transport needs");
  check->add_flag("--json", f.json, "print JSON");
  check->add_option("--config", f.inputs.config_path, "the device plugin's config file")
    ->transform(AbsolutePath());
  check->add_option("--qos", f.inputs.qos,
                    "a NAD's rdmak8s netconf, or just its qos block, as JSON (repeatable)");
  check->add_option("--qos-file", f.inputs.qos_files, "the same, from a file (repeatable)")
    ->transform(AbsolutePath());
  check->add_option("--allow-pfc", f.inputs.allow_pfc,
                    "a priority PFC may be on although RoCE does not use it (repeatable)");
  check->add_option("--runtime", f.inputs.runtimes,
                    "container runtime executable, by file name or whole path; only root's processes "
                    "running it count (repeatable; default containerd, crio)");
  check->add_option("--memlock-min", f.inputs.memlock_min,
                    "RLIMIT_MEMLOCK the runtime needs at least, in bytes (default unlimited)");
  check->add_option("--hugepages", f.inputs.hugepages,
                    "<size>=<count> hugepages the node needs, e.g. 2M=512 (repeatable)");
  check->add_option("--fabric-mtu", f.inputs.fabric_mtu,
                    "[<netdev>=]<mtu>: the netdev MTU of the RoCE fabric, the same on every node "
                    "(repeatable: one bare value, and one per netdev)");
  check->add_option("--sysfs-root", f.env.sysfs_root, "sysfs tree (default /sys)")
    ->transform(AbsolutePath());
  check->add_option("--dev-root", f.env.dev_root, "device tree (default /dev)")
    ->transform(AbsolutePath());
  check->add_option("--proc-root", f.env.proc_root, "the host's /proc (default /proc)")
    ->transform(AbsolutePath());
  check->add_flag("--no-verbs", f.no_verbs, "do not query libibverbs (no active MTU)");
  return check;
}

// The node check over the real seams: discovery, DCB, RDMA and route netlink (each one that
// cannot open is left null with its error, for the checks to report).
int RunCheck(CheckFlags& f) {
  inspect::CheckEnv& env = f.env;
  std::unique_ptr<VerbsQuery> verbs;
  if (!f.no_verbs && env.sysfs_root == "/sys") verbs = NewIbverbsQuery();
  SysfsDiscovery discovery({env.sysfs_root, verbs.get()});
  env.discovery = &discovery;
  auto dcb = NewDcbNetlink();
  if (dcb.ok()) {
    env.pfc = dcb->get();
    env.app = dcb->get();
    env.trust = dcb->get();
  } else {
    env.dcb_error = dcb.status();
  }
  auto rdma = NewRdmaNetlink();
  if (rdma.ok()) env.rdma = rdma->get(); else env.rdma_error = rdma.status();
  auto route = NewRouteNetlink();
  if (route.ok()) {
    env.links = route->get();
    env.addresses = route->get();
  } else {
    env.route_error = route.status();
  }
  return inspect::RunCheckCommand(f.inputs, f.json, env, std::cout, std::cerr);
}

int RunDiscovery(const DiscoveryFlags& f) {
  // libibverbs always reads the real /sys: only ask it about the host's own tree.
  std::unique_ptr<VerbsQuery> verbs;
  if (!f.no_verbs && f.options.sysfs_root == "/sys") verbs = NewIbverbsQuery();
  SysfsDiscovery discovery({f.options.sysfs_root, verbs.get()});
  return inspect::Run(f.options, discovery, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  const bool check_verb = argc > 1 && std::string(argv[1]) == "check";
  try {
    CLI::App app{"rdmak8s-inspect: the RDMA devices of this host as rdmak8s discovers them"};
    app.set_version_flag("--version", "rdmak8s-inspect " RDMAK8S_VERSION);
    DiscoveryFlags discovery;
    AddDiscoveryFlags(app, discovery);
    CheckFlags check;
    CLI::App* check_command = AddCheckCommand(app, check);
    if (std::optional<int> rc = ParseCommandLine(app, argc, argv)) {
      return check_verb && *rc != 0 ? inspect::kCheckUsage : *rc;
    }
    if (check_command->parsed()) return RunCheck(check);
    return RunDiscovery(discovery);
  } catch (const std::exception& e) {
    std::cerr << "rdmak8s-inspect: " << e.what() << "\n";
    return check_verb ? inspect::kCheckFailed : inspect::kExitError;
  }
}
