// Discovery's threaded fan-out over the devices of one call.
#include "discovery/discovery_fan_out.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "discovery/discovery_device.h"

namespace rdmak8s::internal::discovery {

// Reads every device, on a few threads when there are many: discovery's cost is syscalls
// (about 190 per device: attributes, GIDs, links), which run in parallel in the kernel.
std::vector<std::optional<StatusOr<RdmaDevice>>> ReadDevices(Context& ctx,
                                                            const std::vector<std::string>& names) {
  constexpr size_t kDevicesPerThread = 32;
  constexpr unsigned kMaxThreads = 8;
  std::vector<std::optional<StatusOr<RdmaDevice>>> out(names.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < names.size();) out[i].emplace(ReadDevice(ctx, names[i]));
  };
  unsigned threads = std::min<unsigned>(
      {std::max(1u, std::thread::hardware_concurrency()), kMaxThreads,
       static_cast<unsigned>(names.size() / kDevicesPerThread + 1)});
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads: the calling thread does the rest
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  return out;
}

}  // namespace rdmak8s::internal::discovery
