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
#include "rdmak8s/dcb_netlink.h"
#include "rdmak8s/discovery.h"
#include "rdmak8s/command_line.h"
#include "rdmak8s/path_flag.h"
#include "rdmak8s/rdma_netlink.h"
#include "rdmak8s/route_netlink.h"
#include "rdmak8s/verbs.h"

int main(int argc, char** argv) {
  const bool check_verb = argc > 1 && std::string(argv[1]) == "check";
  try {
    CLI::App app{"rdmak8s-inspect: the RDMA devices of this host as rdmak8s discovers them"};
    app.set_version_flag("--version", "rdmak8s-inspect " RDMAK8S_VERSION);
    rdmak8s::inspect::Options options;
    bool no_verbs = false;
    app.add_flag("--json", options.json, "print JSON, one object per device");
    app.add_option("--sysfs-root", options.sysfs_root, "sysfs tree to inspect (default /sys)")
      ->transform(rdmak8s::AbsolutePath());
    app.add_flag("--no-verbs", no_verbs, "do not query libibverbs (sysfs only)");

    CLI::App* check = app.add_subcommand(
        "check", "is this node ready for RDMA pods: the checks each device's transport needs");
    rdmak8s::inspect::CheckInputs inputs;
    rdmak8s::inspect::CheckEnv env;
    bool check_json = false, check_no_verbs = false;
    check->add_flag("--json", check_json, "print JSON");
    check->add_option("--config", inputs.config_path, "the device plugin's config file")
      ->transform(rdmak8s::AbsolutePath());
    check->add_option("--qos", inputs.qos,
                      "a NAD's rdmak8s netconf, or just its qos block, as JSON (repeatable)");
    check->add_option("--qos-file", inputs.qos_files, "the same, from a file (repeatable)")
      ->transform(rdmak8s::AbsolutePath());
    check->add_option("--allow-pfc", inputs.allow_pfc,
                      "a priority PFC may be on although RoCE does not use it (repeatable)");
    check->add_option("--runtime", inputs.runtimes,
                      "container runtime executable, by file name or whole path; only root's processes "
                      "running it count (repeatable; default containerd, crio)");
    check->add_option("--memlock-min", inputs.memlock_min,
                      "RLIMIT_MEMLOCK the runtime needs at least, in bytes (default unlimited)");
    check->add_option("--hugepages", inputs.hugepages,
                      "<size>=<count> hugepages the node needs, e.g. 2M=512 (repeatable)");
    check->add_option("--fabric-mtu", inputs.fabric_mtu,
                      "[<netdev>=]<mtu>: the netdev MTU of the RoCE fabric, the same on every node "
                      "(repeatable: one bare value, and one per netdev)");
    check->add_option("--sysfs-root", env.sysfs_root, "sysfs tree (default /sys)")
      ->transform(rdmak8s::AbsolutePath());
    check->add_option("--dev-root", env.dev_root, "device tree (default /dev)")
      ->transform(rdmak8s::AbsolutePath());
    check->add_option("--proc-root", env.proc_root, "the host's /proc (default /proc)")
      ->transform(rdmak8s::AbsolutePath());
    check->add_flag("--no-verbs", check_no_verbs, "do not query libibverbs (no active MTU)");

    if (std::optional<int> rc = rdmak8s::ParseCommandLine(app, argc, argv)) {
      return check_verb && *rc != 0 ? rdmak8s::inspect::kCheckUsage : *rc;
    }

    if (check->parsed()) {
      std::unique_ptr<rdmak8s::VerbsQuery> verbs;
      if (!check_no_verbs && env.sysfs_root == "/sys") verbs = rdmak8s::NewIbverbsQuery();
      rdmak8s::SysfsDiscovery discovery({env.sysfs_root, verbs.get()});
      env.discovery = &discovery;
      auto dcb = rdmak8s::NewDcbNetlink();
      if (dcb.ok()) {
        env.pfc = dcb->get();
        env.app = dcb->get();
        env.trust = dcb->get();
      } else {
        env.dcb_error = dcb.status();
      }
      auto rdma = rdmak8s::NewRdmaNetlink();
      if (rdma.ok()) env.rdma = rdma->get(); else env.rdma_error = rdma.status();
      auto route = rdmak8s::NewRouteNetlink();
      if (route.ok()) {
        env.links = route->get();
        env.addresses = route->get();
      } else {
        env.route_error = route.status();
      }
      return rdmak8s::inspect::RunCheckCommand(inputs, check_json, env, std::cout, std::cerr);
    }

    // libibverbs always reads the real /sys: only ask it about the host's own tree.
    std::unique_ptr<rdmak8s::VerbsQuery> verbs;
    if (!no_verbs && options.sysfs_root == "/sys") verbs = rdmak8s::NewIbverbsQuery();
    rdmak8s::SysfsDiscovery discovery({options.sysfs_root, verbs.get()});
    return rdmak8s::inspect::Run(options, discovery, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "rdmak8s-inspect: " << e.what() << "\n";
    return check_verb ? rdmak8s::inspect::kCheckFailed : rdmak8s::inspect::kExitError;
  }
}
