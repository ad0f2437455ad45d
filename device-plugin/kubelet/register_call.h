// The v1beta1 Register call to kubelet and what it needs: which registration kubelet expects
// (device-plugin socket dir or plugin watcher), our sockets' file names, the retry backoffs,
// which kubelet start a kubelet.sock is, and a Register that another thread may cancel.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

inline constexpr char kKubeletSocket[] = "kubelet.sock";

// kDevicePlugin: our sockets in kubelet's device-plugins dir, and we call Register on its
// kubelet.sock. kPluginWatcher: our sockets in the plugins_registry dir, and kubelet's plugin
// watcher dials us (GetInfo, NotifyRegistrationStatus). kAuto: pick one (ResolveRegistrationMode).
enum class RegistrationMode { kAuto, kDevicePlugin, kPluginWatcher };
// "auto" | "device-plugin" | "plugin-watcher"; anything else is kInvalidArgument naming the flag.
StatusOr<RegistrationMode> ParseRegistrationMode(std::string_view s);
// `requested`, with kAuto made kDevicePlugin when `kubelet_dir` exists or `plugins_registry_dir`
// does not, else kPluginWatcher. Never returns kAuto.
RegistrationMode ResolveRegistrationMode(RegistrationMode requested, const std::string& kubelet_dir,
                                         const std::string& plugins_registry_dir);
// File name of a resource's socket (also the endpoint told to kubelet):
// "rdmak8s-<resource>.sock" with every '/' made '-'.
std::string SocketFileName(const std::string& resource);
// How long to wait after the `failures`-th Register in a row failed (failures >= 1): 1 s,
// doubling, at most 30 s.
std::chrono::seconds RegisterBackoff(int failures);
// How long a registered pool waits for a ListAndWatch stream after `losses` re-registrations for
// a lost stream in a row: `first`, doubling, at most 30 s (and never less than `first`).
std::chrono::milliseconds StreamWait(std::chrono::milliseconds first, int losses);

// Which kubelet serves a kubelet.sock. Every kubelet start makes a new socket file, so the file's
// (st_dev, st_ino, st_ctim) tells one kubelet start from the next: registering twice with one
// kubelet is what makes kubelet v1.36 drop the resource to 0 (see PoolRegistrations). All zero: none
// or unknown.
struct KubeletInstance {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t ctime_ns = 0;
  bool known() const { return ino != 0; }
  friend bool operator==(const KubeletInstance&, const KubeletInstance&) = default;
};
// The instance behind `kubelet_socket` now (lstat); unknown when there is no file.
KubeletInstance KubeletInstanceOf(const std::string& kubelet_socket);

// True when a kubelet listens on `kubelet_socket`: a connect is accepted (or waits in a full
// backlog). False when the file is missing or the connect is refused: no kubelet runs there (a
// kubelet stopped with SIGTERM leaves its socket file; the next one replaces it).
bool KubeletListens(const std::string& kubelet_socket);

// Lets another thread cancel a RegisterWithKubelet at any step: connecting, waiting for
// kubelet's first frame, or in the call. Cancel() is sticky and may come before the call starts.
//
// Thread safety: Cancel() and cancelled() from any thread; SetCall() from the thread running the
// Register.
class RegisterCancellation {
 public:
  RegisterCancellation();  // an eventfd; without one, a cancel is still seen between steps
  ~RegisterCancellation();
  RegisterCancellation(const RegisterCancellation&) = delete;
  RegisterCancellation& operator=(const RegisterCancellation&) = delete;

  void Cancel();
  bool cancelled() const;
  // Readable once cancelled; -1 when no eventfd could be made.
  int fd() const { return event_fd_; }
  // The context of the call in flight (null: none any more) and the kubelet it was made on;
  // Cancel() cancels it. False, with nothing set, when already cancelled.
  bool SetCall(grpc::ClientContext* ctx, const KubeletInstance& instance = {});
  // True while the Register call itself is in flight: kubelet may already have it.
  bool in_call() const;
  // The kubelet the call was made on (unknown before the call, or when kubelet.sock changed
  // while connecting).
  KubeletInstance instance() const;

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  grpc::ClientContext* call_ = nullptr;  // guarded by mu_
  KubeletInstance instance_;             // guarded by mu_
  int event_fd_ = -1;
};

// v1beta1 Registration.Register on `kubelet_socket` for `endpoint` (a file name in the kubelet
// dir), all within `timeout`. Connects itself, retrying every 10 ms (doubling, at most 200 ms)
// while the socket is missing, refuses (a kubelet between its bind and its listen) or closes
// before kubelet's first frame (a kubelet going away), then makes the call on that one
// connection; the connection is closed when this returns, whatever the outcome (gRPC 1.51's own
// channels leak a connection whose call is cancelled just as it connects). `cancel`, when given,
// may stop it from another thread at any step, and records which kubelet the call went to
// (kubelet.sock's instance, when it was the same just before and just after connecting).
// kDeadlineExceeded (no kubelet answered in time),
// kUnavailable / kInternal from kubelet's answer, kInternal when cancelled, each prefixed
// "register <resource> with kubelet <socket>".
Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                           const std::string& resource, std::chrono::milliseconds timeout,
                           RegisterCancellation* cancel = nullptr);

}  // namespace rdmak8s::dp
