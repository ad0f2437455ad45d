#include "node/probes.h"

#include <utility>

namespace rdmak8s::node {

namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

LoopHeartbeats::LoopHeartbeats(std::chrono::nanoseconds default_stall_after, Clock now)
    : default_stall_after_ns_(default_stall_after.count()),
      now_(now ? std::move(now) : Clock(SteadyNowNs)) {}

LoopHeartbeats::Loop& LoopHeartbeats::Get(const std::string& loop) {
  auto [it, fresh] = loops_.try_emplace(loop);
  if (fresh) it->second.stall_after_ns = default_stall_after_ns_;
  return it->second;
}

void LoopHeartbeats::Beat(const std::string& loop) {
  const int64_t now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  Get(loop).at_ns = now;
}

void LoopHeartbeats::Beat(const std::string& loop, std::chrono::nanoseconds stall_after) {
  const int64_t now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  Loop& l = Get(loop);
  l.at_ns = now;
  l.stall_after_ns = stall_after.count();
}

void LoopHeartbeats::SetStallBound(const std::string& loop, std::chrono::nanoseconds stall_after) {
  std::lock_guard<std::mutex> lock(mu_);
  Get(loop).stall_after_ns = stall_after.count();
}

std::string LoopHeartbeats::Stalled() const {
  const int64_t now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, l] : loops_) {
    if (l.at_ns == 0) continue;
    const int64_t age = now - l.at_ns;
    if (age > l.stall_after_ns) {
      return name + " stalled: no wakeup for " + std::to_string(age / 1'000'000'000) + "s";
    }
  }
  return "";
}

HttpResponse ProbeResponse(const std::string& why) {
  if (why.empty()) return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
  return HttpResponse{503, "text/plain; charset=utf-8", why + "\n"};
}

HttpResponse NotFoundResponse() { return HttpResponse{404, "text/plain; charset=utf-8", "not found\n"}; }

}  // namespace rdmak8s::node
