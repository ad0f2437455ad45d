#include "device-plugin/metrics/metrics.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "device-plugin/metrics/fabric_metrics.h"
#include "node/agent_http.h"
#include "node/http_server.h"
#include "node/probes.h"

namespace rdmak8s::dp {

namespace {

// The daemon's one loop that beats (its /livez reason: "event loop stalled: ...").
constexpr char kEventLoop[] = "event loop";

}  // namespace

class Metrics::Impl {
 public:
  explicit Impl(std::string sysfs_root)
      : registry(std::make_shared<prometheus::Registry>()),
        counters(std::make_shared<FabricMetrics>(FabricSources{std::move(sysfs_root), nullptr, ""})),
        devices(prometheus::BuildGauge()
                    .Name("rdmak8s_pool_devices")
                    .Help("Distinct RDMA devices per pool, by health")
                    .Register(*registry)),
        ids(prometheus::BuildGauge()
                .Name("rdmak8s_pool_ids")
                .Help("Device IDs advertised to kubelet per pool, by health (a shared pool "
                      "advertises capacity IDs per RDMA device)")
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
                  .Help("1 when /readyz answers 200: serving, every pool registered with "
                        "kubelet and streaming its devices to it (ListAndWatch), event loop alive")
                  .Register(*registry)
                  .Add({})) {}

  std::shared_ptr<prometheus::Registry> registry;
  std::shared_ptr<FabricMetrics> counters;
  prometheus::Family<prometheus::Gauge>& devices;
  prometheus::Family<prometheus::Gauge>& ids;
  prometheus::Family<prometheus::Counter>& allocations;
  prometheus::Family<prometheus::Counter>& registrations;
  prometheus::Family<prometheus::Counter>& reloads;
  prometheus::Histogram& discovery;
  prometheus::Gauge& ready;
  // /metrics and the probes (node/agent_http.h), made by Metrics' constructor: its answers are
  // Metrics' own.
  std::unique_ptr<node::AgentHttp> http;
  std::mutex mu;  // guards the families above and the readiness state below
  bool serving = false;
  std::map<std::string, bool> registered;  // resource -> kubelet accepted it
  std::map<std::string, bool> streaming;   // resource -> kubelet holds its ListAndWatch stream
  node::LoopHeartbeats heartbeats{std::chrono::minutes(11)};  // the one loop: kEventLoop
};

Metrics::Metrics(std::string sysfs_root) : impl_(std::make_unique<Impl>(std::move(sysfs_root))) {
  impl_->http = std::make_unique<node::AgentHttp>(node::AgentHttp::Answers{
      [this] { return NotLive(); }, [this] { return Unready(); }, [this] { return Scrape(); }});
}
// The server's threads call back into this object: stopped before anything of it goes.
Metrics::~Metrics() { Stop(); }

Status Metrics::Serve(const std::string& address) { return impl_->http->Serve(address); }

void Metrics::Stop() { impl_->http->Stop(); }

int Metrics::port() const { return impl_->http->port(); }

node::HttpServer::Stats Metrics::http_stats() const { return impl_->http->stats(); }

void Metrics::SetPoolDevices(const std::string& resource, const PoolCounts& counts) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->devices.Add({{"resource", resource}, {"health", "Healthy"}}).Set(counts.healthy_devices);
  impl_->devices.Add({{"resource", resource}, {"health", "Unhealthy"}}).Set(counts.unhealthy_devices);
  impl_->ids.Add({{"resource", resource}, {"health", "Healthy"}}).Set(counts.healthy_ids);
  impl_->ids.Add({{"resource", resource}, {"health", "Unhealthy"}}).Set(counts.unhealthy_ids);
}

void Metrics::RemovePool(const std::string& resource) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->registered.erase(resource);
  impl_->streaming.erase(resource);
  impl_->devices.Remove(&impl_->devices.Add({{"resource", resource}, {"health", "Healthy"}}));
  impl_->devices.Remove(&impl_->devices.Add({{"resource", resource}, {"health", "Unhealthy"}}));
  impl_->ids.Remove(&impl_->ids.Add({{"resource", resource}, {"health", "Healthy"}}));
  impl_->ids.Remove(&impl_->ids.Add({{"resource", resource}, {"health", "Unhealthy"}}));
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

void Metrics::SetCounterDevices(std::vector<CounterDevice> devices) {
  impl_->counters->SetDevices(std::move(devices));
}

void Metrics::SetFabricSources(EthtoolStats* ethtool, std::string node_check_results) {
  impl_->counters->SetEthtool(ethtool);
  impl_->counters->SetNodeCheckResults(std::move(node_check_results));
}

void Metrics::SetServing(bool serving) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->serving = serving;
}

void Metrics::SetRegistered(const std::string& resource, bool registered) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->registered[resource] = registered;
}

void Metrics::SetStreaming(const std::string& resource, bool streaming) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->streaming[resource] = streaming;
}

void Metrics::Heartbeat() { impl_->heartbeats.Beat(kEventLoop); }

void Metrics::SetStallBound(std::chrono::seconds stall_after) {
  impl_->heartbeats.SetStallBound(kEventLoop, stall_after);
}

std::string Metrics::NotLive() const { return impl_->heartbeats.Stalled(); }

std::string Metrics::Unready() const {
  if (std::string why = NotLive(); !why.empty()) return why;
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!impl_->serving) return "not serving";
  std::string missing;
  for (const auto& [resource, ok] : impl_->registered) {
    if (ok) continue;
    missing += missing.empty() ? resource : ", " + resource;
  }
  if (!missing.empty()) return "not registered with kubelet: " + missing;
  for (const auto& [resource, ok] : impl_->streaming) {
    if (ok) continue;
    missing += missing.empty() ? resource : ", " + resource;
  }
  if (!missing.empty()) return "no ListAndWatch stream from kubelet: " + missing;
  return "";
}

std::string Metrics::Scrape() const {
  std::vector<prometheus::MetricFamily> fams;
  bool ready = Unready().empty();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->ready.Set(ready ? 1 : 0);
    fams = impl_->registry->Collect();
  }
  for (auto& f : impl_->counters->Collect()) fams.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(fams);
}

}  // namespace rdmak8s::dp
