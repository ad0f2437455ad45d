// The DRA driver's command line (driver_flags.h).
#include "dra/driver_flags.h"

#include <unistd.h>

#include <iterator>
#include <vector>

#include "dra/api/health_change_limit.h"
#include "dra/api/kube_config.h"
#include "dra/api/slice_devices.h"
#include "dra/binding_conditions.h"
#include "rdmak8s/base/path_flag.h"

namespace rdmak8s::dra {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "node";
  return buf;
}

void AddIdentityFlags(CLI::App& app, DriverFlags& f) {
  app.add_option("--driver-name", f.prep.driver_name, "DRA driver name (DeviceClass selectors, "
                 "ResourceSlices, CDI vendor)")->capture_default_str();
  app.add_option("--node-name", f.node_name, "this node's name: the pool of its devices")
      ->capture_default_str();
}

void AddApiServerFlags(CLI::App& app, DriverFlags& f) {
  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig of the API server (development); default: in-cluster config "
                 "(KUBERNETES_SERVICE_HOST/PORT and the pod's service account)")
      ->transform(AbsolutePath());
  app.add_option("--service-account-dir", f.service_account_dir,
                 "in-cluster: where the service account's token and ca.crt are")
      ->capture_default_str()
      ->transform(AbsolutePath());
  auto* no_api = app.add_flag("--no-api-server", f.no_api_server,
                              "development and tests only: talk to no API server (publish no "
                              "ResourceSlices; every claim fails to prepare)");
  app.add_flag("--delete-slices-on-exit", f.delete_slices_on_exit,
               "on SIGTERM/SIGINT, delete this node's ResourceSlices of this driver before "
               "exiting: for uninstall (the scheduler stops offering the devices). Leave off "
               "for restarts and rolling updates, where the next instance takes the slices over")
      ->excludes(no_api);
  app.add_option("--shares", f.shares,
                 "0: exclusive, one DRA device per RDMA function. N > 0: shared, N allocations "
                 "per function: one device with consumable capacity where the server has it "
                 "(KEP-5075), else N devices \"<name>-<k>\" per function")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
}

void AddNodePathFlags(CLI::App& app, DriverFlags& f) {
  app.add_option("--plugins-registry-dir", f.plugin.registry_dir,
                 "kubelet plugin-watcher directory")->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--plugin-dir", f.plugin.plugin_dir,
                 "where dra.sock goes (default /var/lib/kubelet/plugins/<driver-name>)")
      ->transform(AbsolutePath());
  app.add_option("--state-dir", f.prep.state_dir, "checkpoint of prepared claims")
      ->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--cdi-dir", f.prep.cdi_dir, "where per-claim CDI specs go")->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--pod-devices-dir", f.prep.pod_devices_dir,
                 "root-owned records of each pod's prepared devices, for the CNI")
      ->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--sysfs-root", f.sysfs_root, "where sysfs is mounted")->capture_default_str()
      ->transform(AbsolutePath());
  app.add_option("--dev-root", f.prep.dev_root,
                 "where the host's /dev is mounted (CDI host paths; container paths stay "
                 "/dev/infiniband/...)")->capture_default_str()
      ->transform(AbsolutePath());
}

void AddDeviceHealthFlags(CLI::App& app, DriverFlags& f) {
  node::AddDeviceWatchFlags(app, f.watch);
  app.add_option("--unhealthy-taint-effect", f.taint_effect,
                 "the effect of the taint on a device whose port is not usable: NoSchedule (new "
                 "claims skip it), NoExecute (pods using it are evicted too) or None "
                 "(informational)")
      ->capture_default_str()
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kTaintEffects),
                                                     std::end(kTaintEffects))));
  app.add_option("--health-changes-per-minute", f.health_changes_per_minute,
                 "how often one device's published health may change within a minute; a "
                 "flapping port's later changes are published once the minute allows")
      ->capture_default_str()
      ->check(CLI::Range(1, 60));
  app.add_option("--binding-timeout", f.binding_timeout_s,
                 "seconds an InfiniBand port the subnet manager has not brought up may hold a "
                 "pod at binding before the driver sets PortActivationFailed (the scheduler then "
                 "tries another device); under the scheduler's own bindingTimeout (600 s)")
      ->capture_default_str()
      ->check(CLI::Range(1, 590));
  app.add_option("--devices", f.devices_file,
                 "which RDMA devices this driver takes: a JSON file {\"selectors\": {...}} with "
                 "the device plugin's selector keys (default: every RDMA device of the node)")
      ->transform(AbsolutePath());
}

}  // namespace

DriverFlags DefaultDriverFlags() {
  DriverFlags f;
  f.node_name = HostName();
  f.service_account_dir = kServiceAccountDir;
  f.plugin.registry_dir = "/var/lib/kubelet/plugins_registry";
  f.taint_effect = kDefaultTaintEffect;
  f.health_changes_per_minute = HealthChangeLimit::Options{}.max_changes;
  f.binding_timeout_s = static_cast<int>(BindingConditionOptions{}.timeout.count());
  return f;
}

void AddDriverFlags(CLI::App& app, DriverFlags& f) {
  app.set_version_flag("--version", "rdmak8s-dra-driver " RDMAK8S_VERSION);
  AddIdentityFlags(app, f);
  AddApiServerFlags(app, f);
  AddNodePathFlags(app, f);
  AddDeviceHealthFlags(app, f);
  app.add_option("--metrics-address", f.metrics_address,
                 "host:port for /metrics, /livez and /readyz (\"[<IPv6>]:port\" too); empty "
                 "disables")
      ->capture_default_str();
  app.add_option("-v,--v", f.verbosity, "log verbosity: 0 info, 1 debug, 2 trace")
      ->capture_default_str();
}

void FinishDriverFlags(DriverFlags& f) {
  f.plugin.driver_name = f.prep.driver_name;
  if (f.plugin.plugin_dir.empty()) f.plugin.plugin_dir = "/var/lib/kubelet/plugins/" + f.prep.driver_name;
}

}  // namespace rdmak8s::dra
