#include "dra/metrics.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

#include <prometheus/client_metric.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "node/agent_http.h"
#include "node/probes.h"

namespace rdmak8s::dra {

class DraMetrics::Impl {
 public:
  Impl(const DeviceCatalog* catalog_in, bool slices_expected_in)
      : catalog(catalog_in),
        slices_expected(slices_expected_in),
        registry(std::make_shared<prometheus::Registry>()),
        published(prometheus::BuildCounter()
                      .Name("rdmak8s_dra_slices_published_total")
                      .Help("Publish passes that left this node's ResourceSlices saying what the "
                            "driver holds (each writes only what differs)")
                      .Register(*registry)
                      .Add({})),
        publish_errors(prometheus::BuildCounter()
                           .Name("rdmak8s_dra_slice_publish_errors_total")
                           .Help("Publish passes of the ResourceSlices that failed (retried "
                                 "with backoff)")
                           .Register(*registry)
                           .Add({})),
        slices(prometheus::BuildGauge()
                   .Name("rdmak8s_dra_published_slices")
                   .Help("ResourceSlices of this node's pool after the last successful publish")
                   .Register(*registry)
                   .Add({})),
        devices(prometheus::BuildGauge()
                    .Name("rdmak8s_dra_published_devices")
                    .Help("Devices in this node's ResourceSlices after the last successful "
                          "publish")
                    .Register(*registry)
                    .Add({})),
        tainted(prometheus::BuildGauge()
                    .Name("rdmak8s_dra_tainted_devices")
                    .Help("Devices this node's ResourceSlices publish as unhealthy (tainted "
                          "<driver>/unhealthy, or withdrawn where the server takes no taints)")
                    .Register(*registry)
                    .Add({})),
        held(prometheus::BuildGauge()
                 .Name("rdmak8s_dra_devices_health_held")
                 .Help("Devices whose health change is held back: it changed more often than "
                       "the slices may say within a window (a flapping port)")
                 .Register(*registry)
                 .Add({})),
        health_changes(prometheus::BuildCounter()
                           .Name("rdmak8s_dra_device_health_changes_total")
                           .Help("Changes of a device's health, by result: published to the "
                                 "slices, or held (published later, once the window allows)")
                           .Register(*registry)),
        slice_writes(prometheus::BuildCounter()
                         .Name("rdmak8s_dra_slice_writes_total")
                         .Help("ResourceSlice creates, updates and deletes sent to the API server")
                         .Register(*registry)
                         .Add({})),
        prepares(prometheus::BuildCounter()
                     .Name("rdmak8s_dra_prepare_total")
                     .Help("Claims of NodePrepareResources calls, by result")
                     .Register(*registry)),
        unprepares(prometheus::BuildCounter()
                       .Name("rdmak8s_dra_unprepare_total")
                       .Help("Claims of NodeUnprepareResources calls, by result")
                       .Register(*registry)),
        // Answered from the checkpoint: well under a millisecond; read from the API server: a
        // round trip or more; kubelet gives the whole call 45 s.
        prepare_seconds(prometheus::BuildHistogram()
                            .Name("rdmak8s_dra_prepare_duration_seconds")
                            .Help("Time to prepare one claim (checkpoint answer, or the claim "
                                  "read from the API server and its files written)")
                            .Register(*registry)
                            .Add({}, prometheus::Histogram::BucketBoundaries{
                                         0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 45})),
        claim_status_writes(prometheus::BuildCounter()
                                .Name("rdmak8s_dra_claim_status_writes_total")
                                .Help("Writes of this driver's status.devices entries of a claim, by "
                                      "result (ok, forbidden: the RBAC is missing, error)")
                                .Register(*registry)),
        api_errors(prometheus::BuildCounter()
                       .Name("rdmak8s_dra_api_errors_total")
                       .Help("API server answers that were errors (code: HTTP status; none: no "
                             "answer), each attempt of a retried request counted, by verb")
                       .Register(*registry)),
        ready(prometheus::BuildGauge()
                  .Name("rdmak8s_ready")
                  .Help("1 when /readyz answers 200: registered with kubelet, the slices "
                        "published since start, every loop alive")
                  .Register(*registry)
                  .Add({})) {}

  const DeviceCatalog* catalog;
  const bool slices_expected;
  std::shared_ptr<prometheus::Registry> registry;
  std::mutex mu;  // guards the families
  prometheus::Counter& published;
  prometheus::Counter& publish_errors;
  prometheus::Gauge& slices;
  prometheus::Gauge& devices;
  prometheus::Gauge& tainted;
  prometheus::Gauge& held;
  prometheus::Family<prometheus::Counter>& health_changes;
  prometheus::Counter& slice_writes;
  SliceHealthFigures last_figures;  // what the counters above were advanced to
  prometheus::Family<prometheus::Counter>& prepares;
  prometheus::Family<prometheus::Counter>& unprepares;
  prometheus::Histogram& prepare_seconds;
  prometheus::Family<prometheus::Counter>& claim_status_writes;
  prometheus::Family<prometheus::Counter>& api_errors;
  prometheus::Gauge& ready;
  // /metrics and the probes (node/agent_http.h), made by DraMetrics' constructor: its answers
  // are DraMetrics' own.
  std::unique_ptr<node::AgentHttp> http;

  // What the probes read: never held while anything slow runs.
  mutable std::mutex probe_mu;
  bool registered = false;
  bool published_once = false;
  // Every loop names its own bound when it beats; none is checked before it first beats.
  node::LoopHeartbeats beats{std::chrono::nanoseconds::max()};
};

DraMetrics::DraMetrics(const DeviceCatalog* catalog, bool slices_expected)
    : impl_(std::make_unique<Impl>(catalog, slices_expected)) {
  impl_->http = std::make_unique<node::AgentHttp>(node::AgentHttp::Answers{
      [this] { return NotLive(); }, [this] { return Unready(); }, [this] { return Scrape(); }});
}

DraMetrics::~DraMetrics() { Stop(); }

Status DraMetrics::Serve(const std::string& address) { return impl_->http->Serve(address); }

void DraMetrics::Stop() { impl_->http->Stop(); }

int DraMetrics::port() const { return impl_->http->port(); }

void DraMetrics::ObservePrepare(bool ok, std::chrono::duration<double> took) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->prepares.Add({{"result", ok ? "ok" : "error"}}).Increment();
  impl_->prepare_seconds.Observe(took.count());
}

void DraMetrics::CountUnprepare(bool ok) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->unprepares.Add({{"result", ok ? "ok" : "error"}}).Increment();
}

void DraMetrics::CountClaimStatusWrite(std::string_view result) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->claim_status_writes.Add({{"result", std::string(result)}}).Increment();
}

void DraMetrics::ObservePublish(bool ok, int slices, int devices) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (ok) {
      impl_->published.Increment();
      impl_->slices.Set(slices);
      impl_->devices.Set(devices);
    } else {
      impl_->publish_errors.Increment();
    }
  }
  if (ok) {
    std::lock_guard<std::mutex> lock(impl_->probe_mu);
    impl_->published_once = true;
  }
}

void DraMetrics::ObserveSliceHealth(const SliceHealthFigures& f) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  SliceHealthFigures& last = impl_->last_figures;
  impl_->tainted.Set(f.tainted_devices);
  impl_->held.Set(f.held_devices);
  // Counters only go up: each is advanced by what its cumulative figure gained.
  auto advance = [](prometheus::Counter& c, uint64_t now, uint64_t before) {
    if (now > before) c.Increment(static_cast<double>(now - before));
  };
  advance(impl_->health_changes.Add({{"result", "published"}}), f.changes_published, last.changes_published);
  advance(impl_->health_changes.Add({{"result", "held"}}), f.changes_held, last.changes_held);
  advance(impl_->slice_writes, f.slice_writes, last.slice_writes);
  last = f;
}

void DraMetrics::CountApiError(std::string_view verb, std::string_view code) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->api_errors.Add({{"verb", std::string(verb)}, {"code", std::string(code)}}).Increment();
}

void DraMetrics::SetRegistered(bool registered) {
  std::lock_guard<std::mutex> lock(impl_->probe_mu);
  impl_->registered = registered;
}

void DraMetrics::Heartbeat(const std::string& loop, std::chrono::seconds stall_after) {
  impl_->beats.Beat(loop, stall_after);
}

std::string DraMetrics::NotLive() const { return impl_->beats.Stalled(); }

std::string DraMetrics::Unready() const {
  if (std::string why = NotLive(); !why.empty()) return why;
  std::lock_guard<std::mutex> lock(impl_->probe_mu);
  if (!impl_->registered) return "not registered with kubelet";
  if (impl_->slices_expected && !impl_->published_once) return "ResourceSlices not published yet";
  return "";
}

std::string DraMetrics::Scrape() const {
  std::vector<prometheus::MetricFamily> fams;
  const bool is_ready = Unready().empty();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->ready.Set(is_ready ? 1 : 0);
    fams = impl_->registry->Collect();
  }
  // The catalog's health now: what the next health message tells kubelet.
  if (impl_->catalog != nullptr) {
    prometheus::MetricFamily health;
    health.name = "rdmak8s_dra_device_healthy";
    health.help = "1 when the device is healthy as the driver reports it to kubelet (the "
                  "dra-health stream), else 0, by DRA pool and device and RDMA device";
    health.type = prometheus::MetricType::Gauge;
    for (const CatalogDevice& d : impl_->catalog->All()) {
      prometheus::ClientMetric m;
      m.label = {{"pool", d.pool}, {"device", d.device}, {"rdma_dev", d.dev.name}};
      m.gauge.value = d.health.healthy ? 1 : 0;
      health.metric.push_back(std::move(m));
    }
    fams.push_back(std::move(health));
  }
  return prometheus::TextSerializer().Serialize(fams);
}

}  // namespace rdmak8s::dra
