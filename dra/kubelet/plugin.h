// DraPlugin: the DRA driver's two sockets, served in the order kubelet needs them.
//   1. <plugin_dir>/dra.sock: DRAPlugin v1 and v1beta1 (dra_service.h) and DRAResourceHealth
//      v1alpha1 (health_service.h);
//   2. then, once that serves, <registry_dir>/<driver>-reg.sock: the Registration service
//      (registration.h) whose GetInfo points kubelet at dra.sock. Registering only after serving
//      is what kubelet expects (it dials the endpoint right after GetInfo).
// A stale file at either path (a previous instance that died) is replaced (bound under a
// private dot-name, StagingPath, renamed over it). Stop() removes the registration socket first (kubelet's plugin
// watcher then deregisters us), ends the health streams, then stops the DRA socket; each file is
// removed only while it is still the socket we bound (a newer instance's socket is left alone).
// Stop leaves the catalog alone: its owner (the driver's main) shuts it down. The plugin may be
// started again after Stop. ServeRegistrationAgain() re-creates the registration socket if
// someone removed it (call it on node/socket_dir_watch.h's event).
// With `metrics` (metrics.h), the DRA services count prepares and unprepares there, and the
// registration state it reports for /readyz is kubelet's verdict, reset to "not registered"
// whenever the registration socket is served (again): a new kubelet has yet to call it.
//
// Thread safety: Start, Stop and ServeRegistrationAgain on one thread; accessors from any.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/service_type.h>

#include "dra/device_catalog.h"
#include "dra/kubelet/health_service.h"
#include "dra/kubelet/registration.h"
#include "dra/metrics.h"
#include "dra/preparer.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

// Where a socket for `path` is bound before it is renamed to `path`: "<dir>/.<name>.staging.<pid>",
// a name kubelet's plugin watcher ignores (it skips names starting with ".").
std::string StagingPath(const std::string& path);

struct DraPluginOptions {
  std::string driver_name = "rdma.rdmak8s.io";
  std::string plugin_dir;    // /var/lib/kubelet/plugins/<driver>
  std::string registry_dir;  // /var/lib/kubelet/plugins_registry
  HealthStreamOptions health;  // the health stream's resend interval and announced timeout
};

class DraPlugin {
 public:
  // `preparer`, `catalog` and `metrics` (may be null) are not owned and must outlive the plugin.
  // Nothing is served until Start().
  DraPlugin(DraPluginOptions options, Preparer* preparer, DeviceCatalog* catalog,
            DraMetrics* metrics = nullptr);
  ~DraPlugin();
  DraPlugin(const DraPlugin&) = delete;
  DraPlugin& operator=(const DraPlugin&) = delete;

  // Creates plugin_dir if missing, serves dra.sock, then the registration socket. An error names
  // the socket; on error nothing is left serving.
  Status Start();
  void Stop();
  // True when the registration socket was missing (or replaced) and has been served again.
  StatusOr<bool> ServeRegistrationAgain();

  std::string dra_socket() const { return options_.plugin_dir + "/dra.sock"; }
  std::string registration_socket() const {
    return options_.registry_dir + "/" + options_.driver_name + "-reg.sock";
  }
  std::optional<RegistrationVerdict> verdict() const { return registration_state_.Get(); }
  // See RegistrationState::SetListener; before Start.
  void OnRegistration(std::function<void(const RegistrationVerdict&)> listener);

 private:
  // One gRPC server on one unix socket path, remembering the inode it bound.
  struct Served {
    std::string path;
    std::vector<std::unique_ptr<grpc::Service>> services;
    std::unique_ptr<grpc::Server> server;
    ino_t ino = 0;
    dev_t dev = 0;
  };
  static Status Serve(Served& s);
  static void Unserve(Served& s);
  static bool StillOurs(const Served& s);

  const DraPluginOptions options_;
  Preparer* preparer_;
  DeviceCatalog* catalog_;
  DraMetrics* metrics_;
  RegistrationState registration_state_;
  std::atomic<bool> stopping_{false};  // read by the health streams
  Served dra_;
  Served registration_;
};

}  // namespace rdmak8s::dra
