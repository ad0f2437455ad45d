// An address an agent serves /metrics and the probes on, taken by another process: the agent
// keeps serving kubelet and binds the address once it is free (docs/device-plugin.md#metrics).
//
// Whoever binds a port first owns it; on a node that is any local user. Failing the agent then
// would let an unprivileged process take RDMA away from every new pod of the node, so only what
// the address serves waits: the metrics and the probes, which nobody but that process can
// answer meanwhile. There is no event for "a port became free": this is the one place that
// retries on a timer (0.5 s, doubling to 30 s).
//
// Thread safety: Start and the destructor from one thread; listening() from any. `listen`
// runs on the caller's thread first, then on the retry thread, never on both at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

class ListenRetry {
 public:
  struct Options {
    std::chrono::milliseconds first_retry{500};
    std::chrono::milliseconds max_retry{30000};
  };

  // Calls `listen` now. Ok: listening. An error that is not "the address is taken or not on
  // this node yet" (EADDRINUSE, EADDRNOTAVAIL: a malformed address, EACCES for a privileged
  // port) is returned as it is, for the caller to fail on. A taken address is logged once at
  // ERROR (`listen`'s Status, prefixed by what the agent goes on doing), and the returned object
  // tries again on its own thread until `listen` succeeds (logged at INFO) or it is destroyed.
  static StatusOr<std::unique_ptr<ListenRetry>> Start(std::function<Status()> listen,
                                                      Options options);
  static StatusOr<std::unique_ptr<ListenRetry>> Start(std::function<Status()> listen) {
    return Start(std::move(listen), Options{});
  }
  ~ListenRetry();  // stops the retries; waits for a `listen` call in progress
  ListenRetry(const ListenRetry&) = delete;
  ListenRetry& operator=(const ListenRetry&) = delete;

  bool listening() const { return listening_.load(); }

  // Whether `s` says the address is taken or not there yet (the retried case).
  static bool AddressTaken(const Status& s);

 private:
  ListenRetry(std::function<Status()> listen, Options options);
  void Retry();

  std::function<Status()> listen_;
  Options options_;
  std::atomic<bool> listening_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rdmak8s::node
