// rdmak8s-inspect: every RDMA device on this host (or under --sysfs-root) with its ports, GIDs,
// netdevs, PCI/NUMA placement and character devices. Flags -> options -> inspect::Run.
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "inspect.h"
#include "rdmak8s/discovery.h"
#include "rdmak8s/verbs.h"

int main(int argc, char** argv) {
  try {
    CLI::App app{"rdmak8s-inspect: the RDMA devices of this host as rdmak8s discovers them"};
    app.set_version_flag("--version", "rdmak8s-inspect " RDMAK8S_VERSION);
    rdmak8s::inspect::Options options;
    bool no_verbs = false;
    app.add_flag("--json", options.json, "print JSON, one object per device");
    app.add_option("--sysfs-root", options.sysfs_root, "sysfs tree to inspect (default /sys)");
    app.add_flag("--no-verbs", no_verbs, "do not query libibverbs (sysfs only)");
    CLI11_PARSE(app, argc, argv);

    // libibverbs always reads the real /sys: only ask it about the host's own tree.
    std::unique_ptr<rdmak8s::VerbsQuery> verbs;
    if (!no_verbs && options.sysfs_root == "/sys") verbs = rdmak8s::NewIbverbsQuery();
    rdmak8s::SysfsDiscovery discovery({options.sysfs_root, verbs.get()});
    return rdmak8s::inspect::Run(options, discovery, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "rdmak8s-inspect: " << e.what() << "\n";
    return rdmak8s::inspect::kExitError;
  }
}
