// The DRA driver's command line: every flag with its default and check, in the order --help and
// --print-flags list them (docs/dra.md's flag table, checked by command_line_test).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "dra/kubelet/plugin.h"
#include "dra/preparer.h"
#include "node/device_watch_setup.h"

namespace rdmak8s::dra {

// What the command line says, before the wiring turns it into objects.
struct DriverFlags {
  PreparerOptions prep;        // --driver-name, --state-dir, --cdi-dir, --pod-devices-dir, --dev-root
  DraPluginOptions plugin;     // --plugins-registry-dir, --plugin-dir
  std::string node_name;       // default: the host name
  std::string sysfs_root = "/sys";
  std::string kubeconfig;      // empty: in-cluster
  std::string service_account_dir;
  node::DeviceWatchFlags watch;  // --rescan-interval, --port-poll-interval, --no-verbs
  int shares = 0;
  int verbosity = 0;
  bool no_api_server = false;
  bool delete_slices_on_exit = false;
  // As the device plugin's: loopback unless told (the paths have no authentication); the
  // DaemonSet binds the node's IP. The same port: a node runs one agent or the other (the split
  // overlay gives the driver its own).
  std::string metrics_address = "127.0.0.1:9470";
  std::string taint_effect;
  int health_changes_per_minute = 0;
  int binding_timeout_s = 0;
  std::string devices_file;  // --devices: which devices this driver takes
};

// The defaults that are not constants of this header (the host name, the libraries' own).
DriverFlags DefaultDriverFlags();

// Adds every flag to `app`, bound to `f`.
void AddDriverFlags(CLI::App& app, DriverFlags& f);

// After parsing: the values other flags decide (the plugin's driver name and, unless given, its
// socket directory /var/lib/kubelet/plugins/<driver-name>).
void FinishDriverFlags(DriverFlags& f);

}  // namespace rdmak8s::dra
