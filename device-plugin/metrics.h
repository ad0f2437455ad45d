// Prometheus metrics of the device plugin (prometheus-cpp), served with /healthz by a pull
// exposer on --metrics-address. Names and labels are listed in docs/device-plugin.md#metrics.
// Port counters are read from sysfs (ports/N/counters/*, ports/N/hw_counters/*) at scrape time.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rdmak8s/status.h"

namespace prometheus {
class Registry;
class Exposer;
}  // namespace prometheus

namespace rdmak8s::dp {

class Metrics {
 public:
  explicit Metrics(std::string sysfs_root);
  ~Metrics();

  // Starts the HTTP exposer ("host:port"; port 0 picks one). kUnavailable when it cannot bind.
  Status Serve(const std::string& address);
  // The bound port after Serve (0 before).
  int port() const;

  void SetPoolDevices(const std::string& resource, int healthy, int unhealthy);
  void RemovePool(const std::string& resource);
  void CountAllocation(const std::string& resource, bool ok);
  void CountRegistration(const std::string& resource, bool ok);
  void CountConfigReload(bool ok);
  void ObserveDiscovery(double seconds);
  // The devices whose port counters a scrape reads.
  void SetCounterDevices(std::vector<std::pair<std::string, std::vector<uint32_t>>> dev_ports);
  void SetReady(bool ready);

  // The text exposition of everything (what /metrics answers), for tests.
  std::string Scrape() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmak8s::dp
