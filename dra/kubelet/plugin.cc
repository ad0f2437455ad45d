#include "dra/kubelet/plugin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "dra/kubelet/dra_service.h"
#include "dra/kubelet/health_service.h"
#include "node/program_main.h"
#include "rdmak8s/base/file_util.h"

namespace rdmak8s::dra {

std::string StagingPath(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".staging." + std::to_string(::getpid())))
      .string();
}

DraPlugin::DraPlugin(DraPluginOptions options, Preparer* preparer, DeviceCatalog* catalog,
                     DraMetrics* metrics)
    : options_(std::move(options)), preparer_(preparer), catalog_(catalog), metrics_(metrics) {
  OnRegistration(nullptr);
}

void DraPlugin::OnRegistration(std::function<void(const RegistrationVerdict&)> listener) {
  // RegistrationState keeps the listener under its lock: kubelet's call may come at any time.
  registration_state_.SetListener(
      [metrics = metrics_, listener = std::move(listener)](const RegistrationVerdict& v) {
        if (metrics != nullptr) metrics->SetRegistered(v.registered);
        if (listener) listener(v);
      });
}

DraPlugin::~DraPlugin() { Stop(); }

Status DraPlugin::Serve(Served& s) {
  // gRPC removes the path it listened on when it shuts down, whoever's socket is there by then.
  // Binding a private name and renaming it over the public one (which also replaces a stale
  // file atomically) leaves gRPC only its own private name to remove. The private name is a
  // dot-name in the same directory (rename stays on one file system): kubelet's plugin watcher
  // registers every other socket that appears in plugins_registry, and retries one renamed away
  // forever.
  const std::string staging = StagingPath(s.path);
  ::unlink(staging.c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + staging, grpc::InsecureServerCredentials());
  for (auto& service : s.services) builder.RegisterService(service.get());
  s.server = builder.BuildAndStart();
  if (!s.server) return InternalError("serve " + s.path + ": gRPC could not listen on " + staging);
  struct stat st;
  // kSocketMode before the socket has its public name: bind(2) gave it 0777 less the umask.
  if (::chmod(staging.c_str(), node::kSocketMode) != 0 ||
      ::rename(staging.c_str(), s.path.c_str()) != 0 || ::stat(s.path.c_str(), &st) != 0) {
    Status err = ErrnoError(errno, "serve " + s.path + ": chmod and rename " + staging);
    s.server->Shutdown(std::chrono::system_clock::now());
    s.server->Wait();
    s.server.reset();
    ::unlink(staging.c_str());
    return err;
  }
  s.ino = st.st_ino;
  s.dev = st.st_dev;
  return Status::Ok();
}

bool DraPlugin::StillOurs(const Served& s) {
  struct stat st;
  return s.ino != 0 && ::stat(s.path.c_str(), &st) == 0 && st.st_ino == s.ino && st.st_dev == s.dev;
}

void DraPlugin::Unserve(Served& s) {
  if (!s.server) return;
  bool ours = StillOurs(s);
  s.server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  s.server->Wait();
  s.server.reset();
  s.services.clear();
  if (ours) ::unlink(s.path.c_str());  // a newer instance's socket stays
  s.ino = 0;
}

Status DraPlugin::Start() {
  // 0750 whatever the umask: kubelet (root) alone calls the socket in it.
  RDMAK8S_RETURN_IF_ERROR_CTX(MakeDirs(options_.plugin_dir, 0750), "plugin dir");

  dra_.path = dra_socket();
  dra_.services.push_back(NewDraServiceV1(preparer_, metrics_));
  dra_.services.push_back(NewDraServiceV1beta1(preparer_, metrics_));
  stopping_ = false;
  dra_.services.push_back(NewHealthService(catalog_, &stopping_, options_.health));
  if (Status s = Serve(dra_); !s.ok()) {
    dra_.services.clear();
    return s;
  }
  StatusOr<bool> reg = ServeRegistrationAgain();
  if (!reg.ok()) {
    Unserve(dra_);
    return reg.status();
  }
  SPDLOG_INFO("DRA driver {} serving {}, registered through {}", options_.driver_name, dra_socket(),
              registration_socket());
  return Status::Ok();
}

StatusOr<bool> DraPlugin::ServeRegistrationAgain() {
  if (registration_.server && StillOurs(registration_)) return false;
  if (registration_.server) {
    SPDLOG_WARN("registration socket {} was removed or replaced: serving it again",
                registration_socket());
    registration_.ino = 0;
    registration_.server->Shutdown(std::chrono::system_clock::now());
    registration_.server->Wait();
    registration_.server.reset();
    registration_.services.clear();
  }
  // Whoever calls this socket next has not registered us yet.
  if (metrics_ != nullptr) metrics_->SetRegistered(false);
  registration_.path = registration_socket();
  registration_.services.push_back(
      NewRegistrationService(DraPluginInfo(options_.driver_name, dra_socket()), &registration_state_));
  if (Status s = Serve(registration_); !s.ok()) {
    registration_.services.clear();
    return s;
  }
  return true;
}

void DraPlugin::Stop() {
  Unserve(registration_);
  // Ends the health streams without waiting for gRPC's shutdown deadline; the catalog is the
  // driver's, and outlives this plugin (a restarted plugin serves the same catalog).
  stopping_ = true;
  Unserve(dra_);
}

}  // namespace rdmak8s::dra
