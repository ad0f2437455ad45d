#include "device-plugin/metrics/fabric_metrics.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "device-plugin/metrics/counter_names.h"
#include "device-plugin/metrics/node_check_results.h"
#include "rdmak8s/base/numbers.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/sysfs_attr.h"

namespace rdmak8s::dp {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

enum Family {
  kRaw,        // rdmak8s_port_counter
  kCounter,    // rdmak8s_rdma_counter_total
  kResource,   // rdmak8s_rdma_resource
  kActive,     // rdmak8s_port_active
  kPfc,        // rdmak8s_pfc_pause_frames_total
  kCheck,      // rdmak8s_node_check
  kCheckPass,  // rdmak8s_node_check_passed
  kCheckTime,  // rdmak8s_node_check_timestamp_seconds
  kFamilies,
};

struct FamilySpec {
  const char* name;
  const char* help;
  MetricType type;
};

// By Family.
constexpr FamilySpec kFamilySpecs[kFamilies] = {
    {"rdmak8s_port_counter",
     "RDMA port counters from sysfs ports/N/counters and ports/N/hw_counters", MetricType::Untyped},
    {"rdmak8s_rdma_counter_total",
     "RDMA port counters (sysfs ports/N/counters, ports/N/hw_counters) by the driver's name and "
     "what it shows (kind)",
     MetricType::Counter},
    {"rdmak8s_rdma_resource",
     "RDMA driver statistics that go up and down (resources in use, high-water marks)",
     MetricType::Gauge},
    {"rdmak8s_port_active", "1 when the RDMA port is ACTIVE (sysfs ports/N/state)",
     MetricType::Gauge},
    {"rdmak8s_pfc_pause_frames_total",
     "PFC pause frames per priority, received (rx) and sent (tx), from the PF netdev's ethtool "
     "statistics",
     MetricType::Counter},
    {"rdmak8s_node_check",
     "Last node check (rdmak8s-inspect check) result per check: 1 pass, 0 fail", MetricType::Gauge},
    {"rdmak8s_node_check_passed", "1 when every node check passed last run", MetricType::Gauge},
    {"rdmak8s_node_check_timestamp_seconds",
     "When the node check results were written (Unix time)", MetricType::Gauge},
};

std::vector<MetricFamily> EmptyFamilies() {
  std::vector<MetricFamily> f(kFamilies);
  for (int i = 0; i < kFamilies; ++i) {
    f[i].name = kFamilySpecs[i].name;
    f[i].help = kFamilySpecs[i].help;
    f[i].type = kFamilySpecs[i].type;
  }
  return f;
}

ClientMetric Sample(std::vector<ClientMetric::Label> labels, double v, MetricType type) {
  ClientMetric m;
  m.label = std::move(labels);
  switch (type) {
    case MetricType::Counter: m.counter.value = v; break;
    case MetricType::Gauge: m.gauge.value = v; break;
    default: m.untyped.value = v; break;
  }
  return m;
}

}  // namespace

FabricMetrics::FabricMetrics(FabricSources sources) : sources_(std::move(sources)) {}

void FabricMetrics::SetDevices(std::vector<CounterDevice> devices) {
  std::map<std::string, std::string> known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Device& d : devices_) known[d.dev.rdma_dev] = d.pf_netdev;
  }
  std::vector<Device> next;
  DeviceLookup lookup(sources_.sysfs_root);
  for (CounterDevice& c : devices) {
    Device d{std::move(c), ""};
    if (auto it = known.find(d.dev.rdma_dev); it != known.end()) {
      d.pf_netdev = it->second;
    } else if (d.dev.transport == Transport::kRoce) {
      if (auto sd = lookup.ReadDevice(d.dev.rdma_dev); sd.ok()) {
        if (auto pf = lookup.PfNetdev(*sd); pf.ok()) d.pf_netdev = *pf;
      }
    }
    next.push_back(std::move(d));
  }
  std::lock_guard<std::mutex> lock(mu_);
  devices_ = std::move(next);
}

void FabricMetrics::SetNodeCheckResults(std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  sources_.node_check_results = std::move(path);
}

void FabricMetrics::SetEthtool(EthtoolStats* ethtool) {
  std::lock_guard<std::mutex> lock(mu_);
  sources_.ethtool = ethtool;
}

void FabricMetrics::CollectPorts(const Device& d, std::vector<MetricFamily>& fams) const {
  DeviceLookup lookup(sources_.sysfs_root);
  const std::string& dev = d.dev.rdma_dev;
  for (uint32_t port : d.dev.ports) {
    const std::string port_s = std::to_string(port);
    if (auto state = lookup.ReadPortState(dev, port); state.ok()) {
      fams[kActive].metric.push_back(Sample(
          {{"device", dev}, {"port", port_s}, {"driver", d.dev.driver}},
          *state == PortState::kActive ? 1 : 0, MetricType::Gauge));
    }
    // One path walk per directory, openat(2) per counter: a scrape of 1,024 ports reads ~25,000
    // files (bench/device_plugin_bench.cc prints what it costs).
    StatusOr<SysfsDir> port_dir = SysfsDir::Open(sources_.sysfs_root + "/class/infiniband/" +
                                                 dev + "/ports/" + port_s);
    if (!port_dir.ok()) continue;  // the device just left
    for (const char* dir : {"counters", "hw_counters"}) {
      const bool hw = dir[0] == 'h';
      StatusOr<SysfsDir> counters = port_dir->Sub(dir);
      if (!counters.ok()) continue;  // the driver has none
      StatusOr<std::vector<std::string>> names = counters->List();
      if (!names.ok()) continue;
      std::sort(names->begin(), names->end());
      for (const std::string& name : *names) {
        std::optional<CounterMeaning> meaning = ClassifyPortCounter(name, hw);
        if (!meaning) continue;
        StatusOr<std::string> text = counters->Read(name);
        if (!text.ok()) continue;
        // The whole attribute is the number: "12abc" is no counter value, not 12.
        StatusOr<uint64_t> v = ParseUnsigned<uint64_t>(*text, counters->PathOf(name));
        if (!v.ok()) continue;
        const double value = static_cast<double>(*v);
        fams[kRaw].metric.push_back(Sample(
            {{"rdma_dev", dev}, {"port", port_s}, {"counter", name}, {"source", dir}}, value,
            MetricType::Untyped));
        if (meaning->monotonic) {
          fams[kCounter].metric.push_back(Sample(
              {{"device", dev}, {"port", port_s}, {"driver", d.dev.driver}, {"counter", name},
               {"kind", std::string(CounterKindName(meaning->kind))}},
              value, MetricType::Counter));
        } else {
          fams[kResource].metric.push_back(Sample(
              {{"device", dev}, {"port", port_s}, {"driver", d.dev.driver}, {"counter", name}},
              value, MetricType::Gauge));
        }
      }
    }
  }
}

void FabricMetrics::CollectPfc(std::vector<MetricFamily>& fams) const {
  if (sources_.ethtool == nullptr) return;
  std::set<std::string> netdevs;  // VFs and SFs share their PF's: read each once
  for (const Device& d : devices_) {
    if (!d.pf_netdev.empty()) netdevs.insert(d.pf_netdev);
  }
  for (const std::string& netdev : netdevs) {
    StatusOr<NamedStats> stats = sources_.ethtool->Read(netdev);
    if (!stats.ok()) continue;
    for (const auto& [name, value] : *stats) {
      std::optional<PfcPauseStat> pause = ParsePfcPauseStat(name);
      if (!pause) continue;
      fams[kPfc].metric.push_back(Sample(
          {{"netdev", netdev}, {"priority", std::to_string(pause->priority)},
           {"direction", std::string(PauseDirectionName(pause->direction))}, {"counter", name}},
          static_cast<double>(value), MetricType::Counter));
    }
  }
}

void FabricMetrics::CollectNodeCheck(std::vector<MetricFamily>& fams) const {
  if (sources_.node_check_results.empty()) return;
  StatusOr<NodeCheckResults> r = ReadNodeCheckResults(sources_.node_check_results);
  if (!r.ok()) return;  // not run yet, or not the check's JSON: no check metrics
  for (const NodeCheckItem& i : r->items) {
    if (i.result != "pass" && i.result != "fail") continue;
    fams[kCheck].metric.push_back(Sample({{"subject", i.subject}, {"check", i.check}},
                                         i.result == "pass" ? 1 : 0, MetricType::Gauge));
  }
  fams[kCheckPass].metric.push_back(Sample({}, r->passed ? 1 : 0, MetricType::Gauge));
  fams[kCheckTime].metric.push_back(
      Sample({}, static_cast<double>(r->written_unix_seconds), MetricType::Gauge));
}

std::vector<MetricFamily> FabricMetrics::Collect() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<MetricFamily> fams = EmptyFamilies();
  for (const Device& d : devices_) CollectPorts(d, fams);
  CollectPfc(fams);
  CollectNodeCheck(fams);
  return fams;
}

}  // namespace rdmak8s::dp
