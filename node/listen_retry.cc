#include "node/listen_retry.h"

#include <cerrno>

#include <spdlog/spdlog.h>

namespace rdmak8s::node {

bool ListenRetry::AddressTaken(const Status& s) {
  return s.sys_errno() == EADDRINUSE || s.sys_errno() == EADDRNOTAVAIL;
}

ListenRetry::ListenRetry(std::function<Status()> listen, Options options)
    : listen_(std::move(listen)), options_(options) {}

StatusOr<std::unique_ptr<ListenRetry>> ListenRetry::Start(std::function<Status()> listen,
                                                         Options options) {
  std::unique_ptr<ListenRetry> r(new ListenRetry(std::move(listen), options));
  Status s = r->listen_();
  if (s.ok()) {
    r->listening_ = true;
    return r;
  }
  if (!AddressTaken(s)) return s;
  SPDLOG_ERROR("{}: serving kubelet without /metrics, /livez and /readyz until the address is "
               "free (trying again, every {} ms at most)",
               s.message(), options.max_retry.count());
  r->thread_ = std::thread([p = r.get()] { p->Retry(); });
  return r;
}

ListenRetry::~ListenRetry() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ListenRetry::Retry() {
  std::chrono::milliseconds wait = options_.first_retry;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, wait, [this] { return stop_; })) {
    lock.unlock();
    Status s = listen_();
    lock.lock();
    if (s.ok()) {
      listening_ = true;
      SPDLOG_INFO("the metrics address is free again: serving /metrics, /livez and /readyz");
      return;
    }
    if (!AddressTaken(s)) {
      SPDLOG_ERROR("{}: no more attempts", s.message());
      return;
    }
    SPDLOG_DEBUG("{}: trying again", s.message());
    wait = std::min(wait * 2, options_.max_retry);
  }
}

}  // namespace rdmak8s::node
