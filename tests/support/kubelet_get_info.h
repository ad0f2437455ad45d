// GetInfo on a plugin-watcher socket as kubelet's plugin manager calls it, for both fake kubelets:
// under 1 s, and on failure tried again after the reconciler's backoff (500 ms, doubling) while
// attempts last (kGetInfoAttempts: the last starts about a minute after the first).
// real-peers.md ("kubelet's deadlines") says where the figures come from.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "pluginregistration/v1/api.grpc.pb.h"

namespace rdmak8s::fake {

inline constexpr int kGetInfoAttempts = 8;

// The last attempt's status; `on_retry` hears each failure that is tried again.
inline grpc::Status KubeletGetInfo(pluginregistration::Registration::Stub& stub, pluginregistration::PluginInfo* info,
                                   const std::function<void(const grpc::Status&)>& on_retry = {}) {
  auto backoff = std::chrono::milliseconds(500);
  for (int attempt = 1;; ++attempt, backoff *= 2) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    grpc::Status s = stub.GetInfo(&ctx, pluginregistration::InfoRequest(), info);
    if (s.ok() || attempt == kGetInfoAttempts) return s;
    if (on_retry) on_retry(s);
    std::this_thread::sleep_for(backoff);
  }
}

// kubelet's NotifyRegistrationStatus deadline.
inline constexpr auto kNotifyTimeout = std::chrono::seconds(5);

}  // namespace rdmak8s::fake
