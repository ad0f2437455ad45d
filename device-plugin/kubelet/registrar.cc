// KubeletRegistrar's worker thread and its queue (registrar.h).
#include "device-plugin/kubelet/registrar.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include <spdlog/spdlog.h>

namespace rdmak8s::dp {

KubeletRegistrar::KubeletRegistrar() = default;

KubeletRegistrar::~KubeletRegistrar() {
  Shutdown();
  if (event_fd_ >= 0) close(event_fd_);
}

Status KubeletRegistrar::Start() {
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return ErrnoError(errno, "registrar eventfd");
  worker_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void KubeletRegistrar::Submit(Request request) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(queue_, [&](const Request& r) { return r.resource == request.resource; });
  queue_.push_back(std::move(request));
  cv_.notify_all();
}

bool KubeletRegistrar::Supersede(const std::string& resource, const KubeletInstance& current) {
  std::lock_guard<std::mutex> lock(mu_);
  if (inflight_cancel_ == nullptr || inflight_resource_ != resource) return true;
  // In its call on the kubelet there now: kubelet may have it already (it dials us back inside
  // the call). Anything else (connecting, waiting for kubelet's first frame, or in a call on a
  // kubelet that has gone) no kubelet we care about has seen.
  if (inflight_cancel_->in_call() && current.known() && inflight_cancel_->instance() == current) {
    return false;
  }
  inflight_cancel_->Cancel();
  return true;
}

void KubeletRegistrar::Wake() const {
  uint64_t one = 1;
  if (event_fd_ >= 0) (void)!write(event_fd_, &one, sizeof(one));
}

std::vector<KubeletRegistrar::Result> KubeletRegistrar::Drain() {
  uint64_t v;
  while (read(event_fd_, &v, sizeof(v)) > 0) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Result> out;
  out.swap(results_);
  return out;
}

void KubeletRegistrar::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
    if (inflight_cancel_ != nullptr) inflight_cancel_->Cancel();
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

void KubeletRegistrar::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Request req = std::move(queue_.front());
    queue_.erase(queue_.begin());
    RegisterCancellation cancel;
    inflight_cancel_ = &cancel;
    inflight_resource_ = req.resource;
    lock.unlock();
    Status s = RegisterWithKubelet(req.kubelet_socket, req.endpoint, req.resource, req.timeout, &cancel);
    lock.lock();
    inflight_cancel_ = nullptr;
    inflight_resource_.clear();
    results_.push_back(Result{req.seq, req.resource, std::move(s), cancel.instance()});
    uint64_t one = 1;
    (void)!write(event_fd_, &one, sizeof(one));
  }
}

}  // namespace rdmak8s::dp
