// KubeletRegistrar: Register calls to kubelet (register_call.h) on a thread of their own,
// their results handed to the caller's event loop through an eventfd.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device-plugin/kubelet/register_call.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

// KubeletRegistrar runs RegisterWithKubelet on a thread of its own, so that a kubelet.sock nobody
// answers on (a stale file, a kubelet that has bound but does not serve yet) cannot stall the
// caller's event loop for the registration timeout. Results queue up and fd() (an eventfd) turns
// readable; Drain() hands them over. Submit() for a resource replaces that resource's queued
// request; Supersede() cancels its attempt in flight unless kubelet may have it (see there).
// Wake() makes fd() readable with no result (news for the caller's loop from other threads).
//
// Thread safety: Submit/Supersede/Drain/Shutdown from one thread (the event loop); Wake from any;
// the worker is internal.
class KubeletRegistrar {
 public:
  struct Request {
    uint64_t seq = 0;  // echoed in the result, so the caller can drop superseded ones
    std::string kubelet_socket;
    std::string endpoint;
    std::string resource;
    std::chrono::milliseconds timeout{5000};
  };
  struct Result {
    uint64_t seq = 0;
    std::string resource;
    Status status;
    KubeletInstance instance;  // the kubelet the call was made on (unknown: none, or unsure)
  };

  KubeletRegistrar();
  ~KubeletRegistrar();  // Shutdown()
  KubeletRegistrar(const KubeletRegistrar&) = delete;
  KubeletRegistrar& operator=(const KubeletRegistrar&) = delete;

  // Creates the eventfd and starts the worker.
  Status Start();
  int fd() const { return event_fd_; }
  void Submit(Request request);
  // The attempt in flight for `resource`, if any, is cancelled unless it is in its call on
  // `current` (that kubelet may have the Register already: cancelling and registering again
  // would register twice). True when nothing of `resource` is left in a call on `current`.
  bool Supersede(const std::string& resource, const KubeletInstance& current);
  void Wake() const;
  std::vector<Result> Drain();
  // Cancels the call in flight, drops queued requests, joins the worker. Idempotent.
  void Shutdown();

 private:
  void Loop();

  int event_fd_ = -1;
  std::thread worker_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Request> queue_;
  std::vector<Result> results_;
  std::string inflight_resource_;
  RegisterCancellation* inflight_cancel_ = nullptr;  // guarded by mu_
};

}  // namespace rdmak8s::dp
