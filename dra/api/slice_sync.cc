#include "dra/api/slice_sync.h"

#include <algorithm>
#include <exception>
#include <thread>

#include <spdlog/spdlog.h>


namespace rdmak8s::dra {

std::vector<DeviceInput> CatalogDeviceInputs(const std::vector<CatalogDevice>& devices) {
  std::vector<DeviceInput> out;
  out.reserve(devices.size());
  for (const auto& d : devices) {
    DeviceInput in;
    in.device = d.dev;
    in.healthy = d.health.healthy;
    in.unhealthy_reason = d.health.reason;
    out.push_back(std::move(in));
  }
  return out;
}

SliceHealthCounts SliceSync::health_counts() const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  return counts_;
}

SliceSync::SliceSync(SlicePublisher* publisher, const DeviceCatalog* catalog, SliceSyncOptions options,
                     KubeApi* api)
    : publisher_(publisher), catalog_(catalog), options_(std::move(options)), api_(api) {}

void SliceSync::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++kicks_;
  }
  cv_.notify_all();
}

void SliceSync::Trigger(const std::string& why) {
  SPDLOG_INFO("ResourceSlices: publishing again: {}", why);
  Kick();
}

std::optional<std::string> SliceSync::Relist() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t seen = list_seq_;
  ++kicks_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return Stopping() || list_seq_ != seen; });
  if (Stopping()) return std::nullopt;
  return list_rv_;
}

void SliceSync::SleepUntil(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return Stopping(); });
}

// The catalog wakes its own waiters; this turns each change (and the shutdown) into a kick.
void SliceSync::ForwardCatalogChanges(uint64_t seen) {
  while (!Stopping()) {
    uint64_t now = catalog_->WaitForChange(seen, std::chrono::steady_clock::now() + std::chrono::hours(24));
    if (now != seen) Kick();
    seen = now;
  }
  Kick();
}

void SliceSync::WatchLoop() {
  if (api_ == nullptr || publisher_->versions() == nullptr) return;
  SliceWatch watch(api_, publisher_->versions(), publisher_->driver(), publisher_->node_name());
  std::chrono::milliseconds backoff = options_.initial_backoff;
  std::string resource_version;
  bool gone_before = false;  // the last watch ended in 410 Gone
  auto on_event = [&](const SliceEvent& ev) {
    ++watch_events_;
    if (ev.type == SliceEvent::Type::kBookmark) return;
    if (ev.type == SliceEvent::Type::kDeleted) {
      SPDLOG_INFO("ResourceSlice {} was deleted (by kubelet, the garbage collector or a user): "
                  "publishing again", ev.slice.name);
      owner_suspect_ = true;  // a GC deletion: the Node may have a new UID
    }
    Kick();
  };
  auto cancelled = [&] { return Stopping(); };
  while (!Stopping()) {
    if (resource_version.empty()) {
      std::optional<std::string> listed = Relist();
      if (!listed) return;
      resource_version = *listed;
    }
    int events = 0;
    Status s = watch.WatchOnce(&resource_version, options_.watch_timeout_seconds, on_event, cancelled, &events);
    if (Stopping()) return;
    if (s.ok() && events > 0) {  // the server ended the watch: go on from where it was
      backoff = options_.initial_backoff;
      gone_before = false;
      continue;
    }
    if (s.code() == StatusCode::kFailedPrecondition && (events > 0 || !gone_before)) {
      // 410 Gone: our resourceVersion is too old (compacted). Relist at once: publish, then
      // watch from that list; a second 410 in a row without an event waits as an error does.
      SPDLOG_INFO("watch ResourceSlices: {}: relisting", s.message());
      ++watch_relists_;
      resource_version.clear();
      gone_before = true;
      continue;
    }
    gone_before = false;
    if (!s.ok()) {
      SPDLOG_WARN("watch ResourceSlices: {} (watching again in {} ms)", s.message(), backoff.count());
      ++watch_relists_;
      resource_version.clear();  // what happened meanwhile is not known: list again
    }
    // An error, or a watch that ended without a single event (a server or proxy that closes at
    // once): wait before the next one.
    SleepUntil(std::chrono::steady_clock::now() + backoff);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void SliceSync::Run() { RunLoop(); }

void SliceSync::RunLoop() {
  // Read before the first publish does: a change between the two is then either in that
  // publish or kicked, however late the thread starts.
  const uint64_t start_generation = catalog_->generation();
  std::thread forward([this, start_generation] { ForwardCatalogChanges(start_generation); });
  std::thread watcher;
  if (options_.watch && api_ != nullptr) {
    watcher = std::thread([this] {
      try {
        WatchLoop();
      } catch (const std::exception& e) {  // as for Publish below: never the driver's end
        SPDLOG_ERROR("ResourceSlices: the watch stopped: {} (the periodic resync goes on)", e.what());
      }
    });
  }
  std::chrono::milliseconds backoff = options_.initial_backoff;
  uint64_t handled = 0;
  bool pending = true;  // the first pass always publishes
  auto next_resync = std::chrono::steady_clock::now() + options_.resync_interval;
  HealthChangeLimit limit(options_.health_changes);
  while (true) {
    {
      // Woken by a kick, at the resync, or when a held health change may go out.
      const auto wake = std::min(next_resync, limit.next_release().value_or(next_resync));
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, wake, [&] { return Stopping() || pending || kicks_ != handled; });
      if (Stopping()) break;
      handled = kicks_;
    }
    if (std::chrono::steady_clock::now() >= next_resync || owner_suspect_.exchange(false)) {
      publisher_->ForgetOwner();
    }
    uint64_t generation = catalog_->generation();
    std::vector<DeviceInput> inputs =
        limit.Apply(CatalogDeviceInputs(catalog_->All()), std::chrono::steady_clock::now());
    Status s;
    try {
      s = publisher_->Publish(inputs);
    } catch (const std::exception& e) {
      // Nothing below throws by design (checked decoding, Status everywhere); should a library
      // do so after all, it is one failed publish, retried, not the driver's end.
      s = InternalError(std::string("unexpected exception: ") + e.what());
    }
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(counts_mu_);
      counts_.tainted_devices = static_cast<int>(
          std::count_if(inputs.begin(), inputs.end(), [](const DeviceInput& in) { return !in.healthy; }));
      counts_.held_devices = limit.held();
      counts_.changes_let_through = limit.changes_let_through();
      counts_.changes_held = limit.changes_held();
    }
    if (options_.on_publish) options_.on_publish(s);
    if (!s.ok()) {
      SPDLOG_ERROR("publish ResourceSlices: {} (retrying in {} ms)", s.message(), backoff.count());
      pending = true;
      SleepUntil(std::chrono::steady_clock::now() + backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    for (const auto& n : publisher_->last_notes()) SPDLOG_WARN("ResourceSlices: {}", n);
    pending = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      list_rv_ = publisher_->list_resource_version();
      ++list_seq_;
    }
    cv_.notify_all();
    backoff = options_.initial_backoff;
    published_generation_ = generation;
    ++publishes_;
    next_resync = std::chrono::steady_clock::now() + options_.resync_interval;
    SPDLOG_DEBUG("published ResourceSlices for catalog generation {} ({} devices)", generation,
                 inputs.size());
  }
  forward.join();
  if (watcher.joinable()) watcher.join();
}

}  // namespace rdmak8s::dra
