// The v1beta1 Register call to kubelet on a connection of our own (register_call.h).
#include "device-plugin/kubelet/register_call.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <grpcpp/create_channel_posix.h>

#include <spdlog/spdlog.h>

#include "device-plugin/kubelet/plugin_server.h"  // kDevicePluginVersion
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace rdmak8s::dp {

namespace {

using Clock = std::chrono::steady_clock;

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

StatusOr<RegistrationMode> ParseRegistrationMode(std::string_view s) {
  if (s == "auto") return RegistrationMode::kAuto;
  if (s == "device-plugin") return RegistrationMode::kDevicePlugin;
  if (s == "plugin-watcher") return RegistrationMode::kPluginWatcher;
  return InvalidArgumentError("--registration " + std::string(s) +
                              ": want auto, device-plugin or plugin-watcher");
}

RegistrationMode ResolveRegistrationMode(RegistrationMode requested, const std::string& kubelet_dir,
                                         const std::string& plugins_registry_dir) {
  if (requested != RegistrationMode::kAuto) return requested;
  if (Exists(kubelet_dir) || !Exists(plugins_registry_dir)) return RegistrationMode::kDevicePlugin;
  return RegistrationMode::kPluginWatcher;
}

std::string SocketFileName(const std::string& resource) {
  std::string s = "rdmak8s-" + resource + ".sock";
  std::replace(s.begin(), s.end(), '/', '-');
  return s;
}

std::chrono::seconds RegisterBackoff(int failures) {
  return std::chrono::seconds(std::min(30, 1 << std::min(failures - 1, 5)));
}

std::chrono::milliseconds StreamWait(std::chrono::milliseconds first, int losses) {
  const std::chrono::milliseconds cap = std::max<std::chrono::milliseconds>(first, std::chrono::seconds(30));
  std::chrono::milliseconds wait = first;
  for (int i = 0; i < losses && wait < cap; ++i) wait *= 2;
  return std::min(wait, cap);
}

KubeletInstance KubeletInstanceOf(const std::string& kubelet_socket) {
  struct stat st {};
  if (lstat(kubelet_socket.c_str(), &st) != 0) return {};
  return KubeletInstance{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                         static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

RegisterCancellation::RegisterCancellation()
    : event_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

RegisterCancellation::~RegisterCancellation() {
  if (event_fd_ >= 0) close(event_fd_);
}

void RegisterCancellation::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return;
  cancelled_ = true;
  if (call_ != nullptr) call_->TryCancel();
  uint64_t one = 1;
  if (event_fd_ >= 0) (void)!write(event_fd_, &one, sizeof(one));
}

bool RegisterCancellation::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool RegisterCancellation::SetCall(grpc::ClientContext* ctx, const KubeletInstance& instance) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx != nullptr && cancelled_) return false;
  call_ = ctx;
  if (ctx != nullptr) instance_ = instance;
  return true;
}

bool RegisterCancellation::in_call() const {
  std::lock_guard<std::mutex> lock(mu_);
  return call_ != nullptr;
}

KubeletInstance RegisterCancellation::instance() const {
  std::lock_guard<std::mutex> lock(mu_);
  return instance_;
}

namespace {

enum class Wake { kReady, kDeadline, kCancelled };

// Waits until `fd` (-1: none) is readable or hung up, `cancel` fires, or `deadline` passes.
Wake WaitFor(int fd, RegisterCancellation* cancel, Clock::time_point deadline) {
  while (true) {
    if (cancel != nullptr && cancel->cancelled()) return Wake::kCancelled;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Wake::kDeadline;
    pollfd p[2] = {{fd, POLLIN, 0}, {cancel != nullptr ? cancel->fd() : -1, POLLIN, 0}};
    int n = poll(p, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n > 0 && p[0].revents != 0) return Wake::kReady;
  }
}

// A unix stream socket connected to `path`, or -1 with `*err` set. Non-blocking: a listener
// whose backlog is full (a kubelet that does not accept) is EAGAIN, tried again, not a hang.
int ConnectUnix(const std::string& path, int* err) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    *err = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *err = errno;
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool KubeletListens(const std::string& kubelet_socket) {
  int err = 0;
  int fd = ConnectUnix(kubelet_socket, &err);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return err == EAGAIN;  // a full backlog: listening, busy
}

namespace {

// The Register call on `fd`, a connection kubelet has spoken on; the channel owns `fd` and closes
// it when it goes, at the end of this call.
Status CallRegister(int fd, const std::string& endpoint, const std::string& resource,
                    Clock::time_point deadline, const KubeletInstance& instance,
                    RegisterCancellation* cancel) {
  auto channel = grpc::CreateCustomInsecureChannelFromFd("localhost", fd, grpc::ChannelArguments());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version(kDevicePluginVersion);
  req.set_endpoint(endpoint);
  req.set_resource_name(resource);
  req.mutable_options()->set_pre_start_required(false);
  req.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + (deadline - Clock::now()));
  if (cancel != nullptr && !cancel->SetCall(&ctx, instance)) return InternalError("cancelled");
  grpc::Status s = stub->Register(&ctx, req, &resp);
  if (cancel != nullptr) cancel->SetCall(nullptr);
  if (s.ok()) return Status::Ok();
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return DeadlineExceededError(s.error_message());
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) return UnavailableError(s.error_message());
  return InternalError(s.error_message());
}

}  // namespace

Status RegisterWithKubelet(const std::string& kubelet_socket, const std::string& endpoint,
                           const std::string& resource, std::chrono::milliseconds timeout,
                           RegisterCancellation* cancel) {
  const std::string what = "register " + resource + " with kubelet " + kubelet_socket;
  const Clock::time_point deadline = Clock::now() + timeout;
  // Our own connection, not a gRPC channel's: a channel cancelled or dropped just as its
  // subchannel connects leaks that connection in gRPC 1.51 (an fd whose peer is gone, forever).
  // A starting kubelet refuses connects between its bind and its listen (and its new
  // kubelet.sock may briefly be missing): retry within milliseconds.
  std::chrono::milliseconds backoff{10};
  std::string last = "no connection";
  while (true) {
    int err = 0;
    // The kubelet connected to: the socket file's instance when it was the same just before and
    // just after the connect (a kubelet replacing it in between leaves it unknown).
    const KubeletInstance before = KubeletInstanceOf(kubelet_socket);
    int fd = ConnectUnix(kubelet_socket, &err);
    KubeletInstance instance = KubeletInstanceOf(kubelet_socket);
    if (!(instance == before)) instance = {};
    if (fd >= 0) {
      // An HTTP/2 server speaks first (its SETTINGS). A connection closed before that, a kubelet
      // going away, never saw our Register: try a new one. (As gRPC's channels wait for SETTINGS.)
      Wake w = WaitFor(fd, cancel, deadline);
      char byte;
      if (w == Wake::kReady && recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 1) {
        return CallRegister(fd, endpoint, resource, deadline, instance, cancel).Prepend(what);
      }
      close(fd);
      if (w == Wake::kCancelled) return InternalError("cancelled").Prepend(what);
      if (w == Wake::kDeadline) return DeadlineExceededError("kubelet did not answer").Prepend(what);
      last = "connection closed before kubelet answered";
    } else {
      last = std::string("connect: ") + std::strerror(err);
    }
    Wake w = WaitFor(-1, cancel, std::min(deadline, Clock::now() + backoff));
    if (w == Wake::kCancelled) return InternalError("cancelled").Prepend(what);
    if (Clock::now() >= deadline) return DeadlineExceededError(last).Prepend(what);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

}  // namespace rdmak8s::dp
