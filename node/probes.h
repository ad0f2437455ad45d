// What both agents' /livez and /readyz are made of: the heartbeats of the loops that must keep
// waking up, each with its stall bound, and the probe answer (200 "ok", or 503 with the one-line
// reason). Each agent adds its own readiness conditions (registered with kubelet, slices
// published, ...) on top of Stalled().
//
// Thread safety: every method may be called from any thread (the loops beat on theirs, the HTTP
// server's loop reads).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "node/http_server.h"

namespace rdmak8s::node {

class LoopHeartbeats {
 public:
  // Nanoseconds of a monotonic clock; the steady clock unless a test passes its own.
  using Clock = std::function<int64_t()>;
  // `default_stall_after`: the bound of a loop whose bound was never set.
  explicit LoopHeartbeats(std::chrono::nanoseconds default_stall_after, Clock now = nullptr);

  // `loop` is alive now.
  void Beat(const std::string& loop);
  // The same, and its stall bound from now on.
  void Beat(const std::string& loop, std::chrono::nanoseconds stall_after);
  // `loop`'s stall bound, before or after it first beats.
  void SetStallBound(const std::string& loop, std::chrono::nanoseconds stall_after);

  // Empty while every loop that has beaten beat within its bound (a loop that never beat is not
  // checked), else "<loop> stalled: no wakeup for <N>s" for the first stalled one by name.
  std::string Stalled() const;

 private:
  struct Loop {
    int64_t at_ns = 0;  // 0: never beat
    int64_t stall_after_ns = 0;
  };
  Loop& Get(const std::string& loop);  // mu_ held

  const int64_t default_stall_after_ns_;
  const Clock now_;
  mutable std::mutex mu_;
  std::map<std::string, Loop> loops_;
};

// A probe's answer: 200 "ok\n" when `why` is empty, else 503 "<why>\n" (text/plain).
HttpResponse ProbeResponse(const std::string& why);
// 404 "not found\n" (text/plain), for any other path.
HttpResponse NotFoundResponse();

}  // namespace rdmak8s::node
