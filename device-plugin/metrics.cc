#include "device-plugin/metrics.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace rdmak8s::dp {

namespace fs = std::filesystem;

namespace {

// Reads sysfs port counters at scrape time, so they are always current and cost nothing idle.
class PortCounters final : public prometheus::Collectable {
 public:
  explicit PortCounters(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {}

  void Set(std::vector<std::pair<std::string, std::vector<uint32_t>>> dev_ports) {
    std::lock_guard<std::mutex> lock(mu_);
    dev_ports_ = std::move(dev_ports);
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard<std::mutex> lock(mu_);
    prometheus::MetricFamily fam;
    fam.name = "rdmak8s_port_counter";
    fam.help = "RDMA port counters from sysfs ports/N/counters and ports/N/hw_counters";
    fam.type = prometheus::MetricType::Untyped;
    for (const auto& [dev, ports] : dev_ports_) {
      for (uint32_t port : ports) {
        std::string base = sysfs_root_ + "/class/infiniband/" + dev + "/ports/" + std::to_string(port);
        for (const char* dir : {"counters", "hw_counters"}) {
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(base + "/" + dir, ec)) {
            std::ifstream in(e.path());
            uint64_t v = 0;
            if (!(in >> v)) continue;
            prometheus::ClientMetric m;
            m.label = {{"rdma_dev", dev}, {"port", std::to_string(port)},
                       {"counter", e.path().filename().string()}, {"source", dir}};
            m.untyped.value = static_cast<double>(v);
            fam.metric.push_back(std::move(m));
          }
        }
      }
    }
    return {fam};
  }

 private:
  std::string sysfs_root_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::vector<uint32_t>>> dev_ports_;
};

}  // namespace

class Metrics::Impl {
 public:
  explicit Impl(std::string sysfs_root)
      : registry(std::make_shared<prometheus::Registry>()),
        health_registry(std::make_shared<prometheus::Registry>()),
        counters(std::make_shared<PortCounters>(std::move(sysfs_root))),
        devices(prometheus::BuildGauge()
                    .Name("rdmak8s_pool_devices")
                    .Help("Device IDs advertised per pool, by health")
                    .Register(*registry)),
        allocations(prometheus::BuildCounter()
                        .Name("rdmak8s_allocations_total")
                        .Help("Allocate calls per pool and container, by result")
                        .Register(*registry)),
        registrations(prometheus::BuildCounter()
                          .Name("rdmak8s_registrations_total")
                          .Help("Registrations with kubelet per pool, by result")
                          .Register(*registry)),
        reloads(prometheus::BuildCounter()
                    .Name("rdmak8s_config_reloads_total")
                    .Help("Configuration reloads, by result")
                    .Register(*registry)),
        discovery(prometheus::BuildHistogram()
                      .Name("rdmak8s_discovery_duration_seconds")
                      .Help("Time of one full discovery of the RDMA devices")
                      .Register(*registry)
                      .Add({}, prometheus::Histogram::BucketBoundaries{
                                   0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5})),
        ready(prometheus::BuildGauge()
                  .Name("rdmak8s_ready")
                  .Help("1 once the plugin serves every pool")
                  .Register(*health_registry)
                  .Add({})) {}

  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<prometheus::Registry> health_registry;
  std::shared_ptr<PortCounters> counters;
  prometheus::Family<prometheus::Gauge>& devices;
  prometheus::Family<prometheus::Counter>& allocations;
  prometheus::Family<prometheus::Counter>& registrations;
  prometheus::Family<prometheus::Counter>& reloads;
  prometheus::Histogram& discovery;
  prometheus::Gauge& ready;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::mutex mu;
};

Metrics::Metrics(std::string sysfs_root) : impl_(std::make_unique<Impl>(std::move(sysfs_root))) {}
Metrics::~Metrics() = default;

Status Metrics::Serve(const std::string& address) {
  try {
    impl_->exposer = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    return UnavailableError("metrics listen on " + address + ": " + e.what());
  }
  impl_->exposer->RegisterCollectable(impl_->registry, "/metrics");
  impl_->exposer->RegisterCollectable(impl_->counters, "/metrics");
  impl_->exposer->RegisterCollectable(impl_->health_registry, "/healthz");
  return Status::Ok();
}

int Metrics::port() const {
  if (!impl_->exposer) return 0;
  auto ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void Metrics::SetPoolDevices(const std::string& resource, int healthy, int unhealthy) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->devices.Add({{"resource", resource}, {"health", "Healthy"}}).Set(healthy);
  impl_->devices.Add({{"resource", resource}, {"health", "Unhealthy"}}).Set(unhealthy);
}

void Metrics::RemovePool(const std::string& resource) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->devices.Remove(&impl_->devices.Add({{"resource", resource}, {"health", "Healthy"}}));
  impl_->devices.Remove(&impl_->devices.Add({{"resource", resource}, {"health", "Unhealthy"}}));
}

void Metrics::CountAllocation(const std::string& resource, bool ok) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->allocations.Add({{"resource", resource}, {"result", ok ? "ok" : "error"}}).Increment();
}

void Metrics::CountRegistration(const std::string& resource, bool ok) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->registrations.Add({{"resource", resource}, {"result", ok ? "ok" : "error"}}).Increment();
}

void Metrics::CountConfigReload(bool ok) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->reloads.Add({{"result", ok ? "ok" : "error"}}).Increment();
}

void Metrics::ObserveDiscovery(double seconds) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->discovery.Observe(seconds);
}

void Metrics::SetCounterDevices(std::vector<std::pair<std::string, std::vector<uint32_t>>> dev_ports) {
  impl_->counters->Set(std::move(dev_ports));
}

void Metrics::SetReady(bool ready) { impl_->ready.Set(ready ? 1 : 0); }

std::string Metrics::Scrape() const {
  std::vector<prometheus::MetricFamily> fams;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    fams = impl_->registry->Collect();
  }
  for (auto& f : impl_->counters->Collect()) fams.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(fams);
}

}  // namespace rdmak8s::dp
