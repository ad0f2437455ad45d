// Prometheus metrics of the device plugin (prometheus-cpp core registry), served with the probes
// by our own small HTTP server (http_server.h) on --metrics-address. A scrape is computed off
// the server's loop, one at a time, and its text reused for 2 s by every scraper; the probes
// never wait for it. Names and labels are listed
// in docs/device-plugin.md#metrics. The fabric's counters (RDMA port counters, PFC pause frames,
// the node check's last results) are read at scrape time (fabric_metrics.h).
//
// /livez (liveness) answers 200 "ok" while the event loop's heartbeat is younger than the stall
// bound: the process works, whatever kubelet does. /readyz (readiness; /healthz answers the same,
// for whatever probed it before /readyz existed) answers 200 when the plugin is also serving
// (SetServing), every pool is registered with kubelet (SetRegistered) and kubelet holds a
// ListAndWatch stream of every pool (SetStreaming: a registered pool whose stream kubelet ended
// is at 0 allocatable on the node). Otherwise 503 with a one-line reason.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device-plugin/metrics/ethtool_stats.h"
#include "device-plugin/metrics/fabric_metrics.h"
#include "node/http_server.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

class Metrics {
 public:
  explicit Metrics(std::string sysfs_root);
  ~Metrics();

  // Starts the HTTP server for /metrics, /livez, /readyz and /healthz ("host:port"; port 0
  // picks one). kUnavailable naming the address and the cause when it cannot
  // ("metrics listen on 0.0.0.0:9470: bind: Address already in use").
  Status Serve(const std::string& address);
  // Stops the HTTP server at once (open connections are closed). The destructor does too.
  void Stop();
  // The bound port after Serve (0 before).
  int port() const;
  // What the HTTP server did (connections, scrape computations); zeros before Serve.
  node::HttpServer::Stats http_stats() const;

  // What one pool advertises: distinct RDMA devices and advertised IDs (a shared pool has
  // `capacity` IDs per device), each split by health.
  struct PoolCounts {
    int healthy_devices = 0;
    int unhealthy_devices = 0;
    int healthy_ids = 0;
    int unhealthy_ids = 0;
  };
  // rdmak8s_pool_devices and rdmak8s_pool_ids of `resource`.
  void SetPoolDevices(const std::string& resource, const PoolCounts& counts);
  void RemovePool(const std::string& resource);
  void CountAllocation(const std::string& resource, bool ok);
  void CountRegistration(const std::string& resource, bool ok);
  void CountConfigReload(bool ok);
  void ObserveDiscovery(double seconds);
  // The devices whose port counters (and PF netdev's PFC counters) a scrape reads.
  void SetCounterDevices(std::vector<CounterDevice> devices);
  // Where a scrape reads PFC pause counters (null: not at all; not owned, must outlive this)
  // and the node check's results ("": no node check metrics).
  void SetFabricSources(EthtoolStats* ethtool, std::string node_check_results);
  // The daemon serves every pool (true after start, false while shutting down).
  void SetServing(bool serving);
  // Whether kubelet accepted the pool's registration (either registration mode). The daemon
  // reports false when it starts serving a pool; RemovePool forgets the pool.
  void SetRegistered(const std::string& resource, bool registered);
  // Whether kubelet holds a ListAndWatch stream of the pool. The daemon reports false when it
  // starts serving a pool; RemovePool forgets the pool.
  void SetStreaming(const std::string& resource, bool streaming);
  // The event loop is alive; called on every wakeup. /livez and /readyz report "event loop
  // stalled" when the last heartbeat is older than `stall_after` (no heartbeat yet: not checked).
  void Heartbeat();
  void SetStallBound(std::chrono::seconds stall_after);

  // Empty when live, else the one-line reason /livez answers with 503.
  std::string NotLive() const;
  // Empty when ready, else the one-line reason /readyz and /healthz answer with 503.
  std::string Unready() const;

  // The text exposition of everything (what /metrics answers), for tests.
  std::string Scrape() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmak8s::dp
