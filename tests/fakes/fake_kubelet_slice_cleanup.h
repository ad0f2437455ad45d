// FakeKubeletSliceCleanup: what a real kubelet (v1.36.2, measured: shared notes "real-peers")
// does to a node's ResourceSlices, for the tests that must see the driver survive it:
//   - at its start it deletes every ResourceSlice of its node (DeleteCollection with
//     fieldSelector spec.nodeName=<node>): Start();
//   - when a DRA driver's registration socket disappears from plugins_registry, it deletes that
//     driver's slices `driver_cleanup_delay` later (30 s by default) unless the socket is back
//     by then: WatchDriver().
// How slices are deleted is the test's (`delete_slices`: a FakeApiServer's DeleteSlices, or an
// HTTP DeleteCollection).
//
// Thread safety: all methods from any thread; the callback runs on the watcher's thread (or
// Start's caller's).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace rdmak8s::fake {

struct KubeletSliceCleanupOptions {
  std::string node_name;
  std::chrono::milliseconds driver_cleanup_delay{std::chrono::seconds(30)};
  // Deletes the slices of `node` and `driver` ("" : every driver).
  std::function<void(const std::string& node, const std::string& driver)> delete_slices;
};

class FakeKubeletSliceCleanup {
 public:
  explicit FakeKubeletSliceCleanup(KubeletSliceCleanupOptions options);
  ~FakeKubeletSliceCleanup();
  FakeKubeletSliceCleanup(const FakeKubeletSliceCleanup&) = delete;
  FakeKubeletSliceCleanup& operator=(const FakeKubeletSliceCleanup&) = delete;

  // kubelet's start: every slice of the node, deleted now.
  void Start();
  // From now on: when `registration_socket` (driver `driver`) disappears and stays away for
  // the delay, that driver's slices are deleted. One driver per instance. False when the
  // socket's directory cannot be watched.
  bool WatchDriver(const std::string& registration_socket, const std::string& driver);
  // Driver cleanups done so far.
  int driver_cleanups() const { return driver_cleanups_.load(); }

 private:
  void Loop(std::string dir, std::string name, std::string driver);

  const KubeletSliceCleanupOptions options_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;  // eventfd
  std::thread thread_;
  std::atomic<int> driver_cleanups_{0};
};

}  // namespace rdmak8s::fake
