// SliceSync: keeps this node's ResourceSlices saying what the DeviceCatalog holds, whatever
// else deletes or edits them. The loop the driver runs on its own thread publishes (lists the
// server's slices, diffs, writes what differs: slice_publisher.h)
//   - at start;
//   - after every change of the catalog's generation (hot-plug, port state, health, rename:
//     whatever HealthWatcher feeds it);
//   - at once on every event of a watch on its own slices (slice_watch.h): kubelet deletes every
//     slice of its node at its start and a driver's slices 30 s after its socket goes, the
//     garbage collector deletes slices whose owner UID is stale, someone edits them. A deletion
//     also makes the next publish read the Node's UID again (it may have been re-created);
//   - on Trigger(): kubelet (re-)registered the driver (kubelet/registration.h says when);
//   - every resync_interval as a safety net (a watch can miss what a proxy drops), reading the
//     Node's UID again each time;
//   - when a device's health change held by the health-change limit may go out.
// Each device's health reaches the slices through a HealthChangeLimit (health_change_limit.h):
// a flapping port changes its published taint at most health_changes.max_changes times a
// window, and its last health goes out when the window allows.
// A publish that fails is retried with exponential backoff (each retry lists the server's
// slices again, so whatever the failure left half-written is finished); changes and events that
// arrive meanwhile are folded into that retry. The watch runs on a thread of its own: when the
// server ends it, it watches again from the last resourceVersion. Each watch from scratch
// starts where a publish's list left off (its resourceVersion: list, then watch, so no deletion
// between the two is missed); 410 Gone relists that way at once; other errors back off (same
// bounds) and relist.
// Everything ends when the catalog is shut down (the driver is stopping); deleting the slices
// on uninstall is the caller's (SlicePublisher::DeleteAll), after Run returned.
//
// Thread safety: Run on one thread; Trigger and the accessors from any.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dra/api/health_change_limit.h"
#include "dra/api/slice_devices.h"
#include "dra/api/slice_publisher.h"
#include "dra/api/slice_watch.h"
#include "dra/device_catalog.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

// The publisher's input for the catalog's devices (their PCIe roots are discovery's), unhealthy
// ones marked with the catalog's reason. Devices moved into a pod's network namespace are still
// published (they are allocated, not gone).
std::vector<DeviceInput> CatalogDeviceInputs(const std::vector<CatalogDevice>& devices);

struct SliceSyncOptions {
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  // The safety net: a publish at least this often.
  std::chrono::milliseconds resync_interval{std::chrono::minutes(1)};
  // The watch on our slices (needs the publisher's KubeApi to stream); each watch asks the
  // server to end it after watch_timeout_seconds.
  bool watch = true;
  int watch_timeout_seconds = 300;
  // How often one device's published health may change.
  HealthChangeLimit::Options health_changes;
  // Called after each publish attempt with its result (tests and logs). May be null.
  std::function<void(const Status&)> on_publish;
};

// What the health-change limit and the last successful publish say, for /metrics.
struct SliceHealthCounts {
  int tainted_devices = 0;          // published unhealthy (tainted, or withdrawn without taints)
  int held_devices = 0;             // whose health change is held now
  uint64_t changes_let_through = 0;
  uint64_t changes_held = 0;
};

class SliceSync {
 public:
  // `publisher`, `catalog` and `api` (the publisher's; null: no watch) are not owned and must
  // outlive the loop.
  SliceSync(SlicePublisher* publisher, const DeviceCatalog* catalog, SliceSyncOptions options,
            KubeApi* api = nullptr);

  // Publishes until catalog->shut_down(). Errors are logged (once per failed attempt) and
  // retried, never returned: the driver keeps preparing claims while the API server is away.
  // No exception leaves it.
  void Run();
  // A publish as soon as the loop can (`why` is logged). Any thread, also before Run.
  void Trigger(const std::string& why);

  // Successful publishes so far, and the catalog generation the last one published.
  int publishes() const { return publishes_.load(); }
  uint64_t published_generation() const { return published_generation_.load(); }
  // Watch events seen, and watches started again from scratch after 410 Gone or an error.
  int watch_events() const { return watch_events_.load(); }
  int watch_relists() const { return watch_relists_.load(); }
  SliceHealthCounts health_counts() const;

 private:
  void RunLoop();
  void WatchLoop();
  // Kicks on every change of the catalog's generation after `seen`, and at its shutdown.
  void ForwardCatalogChanges(uint64_t seen);
  bool Stopping() const { return catalog_->shut_down(); }
  // Waits until `deadline` or Stopping(), whatever else happens meanwhile.
  void SleepUntil(std::chrono::steady_clock::time_point deadline);
  void Kick();
  // Asks for a publish and waits for it: the resourceVersion its list saw, or nullopt when
  // stopping.
  std::optional<std::string> Relist();

  SlicePublisher* publisher_;
  const DeviceCatalog* catalog_;
  const SliceSyncOptions options_;
  KubeApi* api_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t kicks_ = 0;  // guarded by mu_
  // The resourceVersion of the last successful publish's list, and how many publishes set it:
  // a watch starts where a list left off (list, then watch). Guarded by mu_.
  std::string list_rv_;
  uint64_t list_seq_ = 0;
  std::atomic<bool> owner_suspect_{false};
  std::atomic<int> publishes_{0};
  std::atomic<uint64_t> published_generation_{0};
  std::atomic<int> watch_events_{0};
  std::atomic<int> watch_relists_{0};
  mutable std::mutex counts_mu_;
  SliceHealthCounts counts_;  // guarded by counts_mu_
};

}  // namespace rdmak8s::dra
