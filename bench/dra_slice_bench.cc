// DRA slice publication (issue 12, "Measured in make bench"): for 1,024 RDMA devices (a
// generated sysfs tree, PF + 7 VFs each), how many ResourceSlices and bytes of JSON they make,
// how long building them takes, and how long publishing them to the fake API server over a
// unix socket takes (first publish: creates; resync with nothing changed: one list, no writes;
// one port down: every slice updated with the new pool generation). Then the driver's own paths
// over the same tree: NodePrepareResources p50/p99 (fake kubelet -> dra.sock -> preparer ->
// GET of the claim from the fake API server -> CDI spec and pod record written), and the time
// from a port going down (sysfs + the verbs async event) to the updated slice on the server
// (HealthWatcher -> DeviceCatalog -> SliceSync -> SlicePublisher). Figures, not asserted.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/api/claim_reader.h"
#include "dra/api/slice_publisher.h"
#include "dra/api/slice_sync.h"
#include "dra/health_watcher.h"
#include "dra/kubelet/plugin.h"
#include "fakes/fake_api_server.h"
#include "fakes/fake_dra_kubelet.h"
#include "rdmak8s/discovery/discovery.h"
#include "support/sysfs_builder.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/fake_event_sources.h"

namespace {
using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

using namespace rdmak8s;
using nlohmann::json;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// NodePrepareResources of one claim (one device) at a time, `n` claims, each unprepared after.
bool PrepareLatency(const std::string& dir, testing::FakeApiServer& server, dra::KubeApi* api,
                    const std::vector<RdmaDevice>& devices, int n, std::vector<double>* prepare_ms) {
  dra::DeviceCatalog catalog("node1");
  std::map<std::string, node::TrackedDevice> tracked;
  for (const auto& d : devices) tracked[d.name] = {d, {}, node::Presence::kPresent};
  catalog.Update(tracked);
  dra::PreparerOptions p;
  p.state_dir = dir + "/state";
  p.cdi_dir = dir + "/cdi";
  p.pod_devices_dir = dir + "/pods";
  std::filesystem::create_directories(p.cdi_dir);
  std::filesystem::create_directories(dir + "/reg");
  dra::ApiClaimReader reader(api, dra::ResourceApiVersion::kV1);
  auto preparer = dra::Preparer::Create(p, &reader, &catalog);
  if (!preparer.ok()) return false;
  dra::DraPlugin plugin({p.driver_name, dir + "/plugin", dir + "/reg", {}}, preparer->get(), &catalog);
  if (!plugin.Start().ok()) return false;
  fake::FakeDraKubelet kubelet;
  if (!kubelet.Register(plugin.registration_socket()).ok()) return false;
  for (int i = 0; i < n; ++i) {
    const std::string uid = "claim-" + std::to_string(i);
    const std::string device = dra::DraDeviceName(devices[i % devices.size()].name);
    json claim = {{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"}};
    claim["metadata"] = {{"namespace", "bench"}, {"name", uid}, {"uid", uid}};
    json result = {{"request", "nic"}, {"driver", p.driver_name}, {"pool", "node1"}, {"device", device}};
    claim["status"]["allocation"]["devices"]["results"] = json::array({result});
    claim["status"]["reservedFor"] = json::array({{{"resource", "pods"}, {"name", "p"}, {"uid", "pod-" + uid}}});
    server.AddClaim(claim);
    auto t0 = Clock::now();
    auto r = kubelet.NodePrepareResources({{"bench", uid, uid}});
    prepare_ms->push_back(Ms(Clock::now() - t0));
    if (!r.ok() || !r->claims().at(uid).error().empty()) return false;
    if (!kubelet.NodeUnprepareResources({{"bench", uid, uid}}).ok()) return false;
  }
  kubelet.Disconnect();
  plugin.Stop();
  return true;
}

// Whether the server's slice shows `device` with the unhealthy taint.
bool Tainted(const testing::FakeApiServer& server, const std::string& device) {
  for (const auto& s : server.Slices()) {
    for (const auto& d : s["spec"].value("devices", json::array())) {
      if (d.value("name", "") == device) return d.contains("taints") && !d["taints"].empty();
    }
  }
  return false;
}

// Port 1 of `rdma_dev` down (sysfs, then its verbs async event) -> the tainted slice on the
// server, and back up -> untainted; `cycles` times.
bool PortDownToSlice(const std::string& sys, testing::FakeApiServer& server, dra::KubeApi* api,
                     const std::string& rdma_dev, int cycles, std::vector<double>* down_ms) {
  dra::DeviceCatalog catalog("node1");
  node::DeviceSources sources;
  sources.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys, nullptr});
  auto events = std::make_unique<dp::FakeDeviceEventSource>();
  dp::FakeDeviceEventSource* ev = events.get();
  sources.async_events = std::move(events);
  dra::HealthWatcher watcher(std::move(sources),
                             node::DeviceWatchOptions{sys, std::chrono::hours(1),
                                                      std::chrono::milliseconds::zero()},
                             {}, &catalog);
  if (!watcher.Start().ok()) return false;
  dra::SlicePublisher publisher(api, {"rdma.rdmak8s.io", "node1"});
  dra::SliceSyncOptions o;
  dra::SliceSync sync(&publisher, &catalog, o);
  std::thread watch([&] { (void)watcher.Run(); });
  std::thread loop([&] { sync.Run(); });
  const std::string device = dra::DraDeviceName(rdma_dev);
  const std::string state = sys + "/class/infiniband/" + rdma_dev + "/ports/1/state";
  auto wait_for = [&](bool tainted) {
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (Tainted(server, device) != tainted) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  };
  bool ok = wait_for(false);
  for (int i = 0; ok && i < cycles; ++i) {
    auto t0 = Clock::now();
    std::ofstream(state) << "1: DOWN\n";
    ev->Inject({rdma_dev, 1, "port error"});
    ok = wait_for(true);
    down_ms->push_back(Ms(Clock::now() - t0));
    std::ofstream(state) << "4: ACTIVE\n";
    ev->Inject({rdma_dev, 1, "port active"});
    ok = ok && wait_for(false);
  }
  watcher.Stop();
  watch.join();
  catalog.Shutdown();
  loop.join();
  return ok;
}

}  // namespace

int main() {
  constexpr int kDevices = 1024;
  constexpr int kRuns = 7;
  testing::TempDir tmp;
  testing::SysfsBuilder b(tmp.path() + "/sys");
  if (Status s = testing::BuildScaleTree(b, kDevices, 7, 16); !s.ok()) {
    std::fprintf(stderr, "build tree: %s\n", s.ToString().c_str());
    return 1;
  }
  SysfsDiscovery discovery({tmp.path() + "/sys", nullptr});
  auto found = discovery.DiscoverAll();
  if (!found.ok() || found->devices.size() != kDevices) {
    std::fprintf(stderr, "discovery failed or incomplete\n");
    return 1;
  }
  std::vector<dra::DeviceInput> inputs = dra::DeviceInputsOf(found->devices);
  dra::PublisherOptions options;
  options.driver = "rdma.rdmak8s.io";
  options.node_name = "node1";

  std::vector<double> build_runs;
  size_t bytes = 0, slices = 0;
  for (int i = 0; i < kRuns; ++i) {
    auto t0 = Clock::now();
    auto desired = dra::DesiredSlices(inputs, options, {});
    size_t total = 0;
    for (const auto& s : desired) total += dra::EncodeResourceSlice(s, dra::ResourceApiVersion::kV1).dump().size();
    build_runs.push_back(Ms(Clock::now() - t0));
    bytes = total;
    slices = desired.size();
  }
  std::sort(build_runs.begin(), build_runs.end());

  testing::FakeApiServer server;
  if (!server.Start(tmp.path() + "/api.sock")) {
    std::fprintf(stderr, "fake API server did not start\n");
    return 1;
  }
  server.AddNode("node1", "uid-1");
  dra::KubeConfig config;
  config.server = server.url();
  config.unix_socket = tmp.path() + "/api.sock";
  auto client = dra::CurlKubeClient::Create(config);
  if (!client.ok()) return 1;
  dra::SlicePublisher publisher(client->get(), options);
  auto timed = [&](const std::vector<dra::DeviceInput>& in, double* ms) {
    auto t0 = Clock::now();
    Status s = publisher.Publish(in);
    *ms = Ms(Clock::now() - t0);
    if (!s.ok()) std::fprintf(stderr, "publish: %s\n", s.ToString().c_str());
    return s.ok();
  };
  double first_ms = 0, resync_ms = 0, change_ms = 0;
  if (!timed(inputs, &first_ms) || !timed(inputs, &resync_ms)) return 1;
  inputs[kDevices / 2].device.ports[0].state = PortState::kDown;
  if (!timed(inputs, &change_ms)) return 1;

  std::printf("dra_slice_bench: ResourceSlices (resource.k8s.io/v1) for %d RDMA devices\n", kDevices);
  std::printf("  slices %zu, JSON %zu bytes (%.0f bytes/device)\n", slices, bytes, double(bytes) / kDevices);
  std::printf("  build + encode: best %.2f ms, median %.2f ms\n", build_runs.front(), build_runs[build_runs.size() / 2]);
  std::printf("  publish to the fake API server (unix socket): first %.1f ms, resync unchanged %.1f ms, "
              "one port down %.1f ms\n", first_ms, resync_ms, change_ms);

  constexpr int kClaims = 200;
  std::vector<double> prepare_ms;
  if (!PrepareLatency(tmp.path() + "/drv", server, client->get(), found->devices, kClaims, &prepare_ms)) {
    std::fprintf(stderr, "prepare bench failed\n");
    return 1;
  }
  std::printf("  NodePrepareResources (v1, one claim, claim read from the fake API server): "
              "p50 %.2f ms, p99 %.2f ms over %d claims\n",
              Percentile(prepare_ms, 0.5), Percentile(prepare_ms, 0.99), kClaims);

  std::vector<double> down_ms;
  if (!PortDownToSlice(tmp.path() + "/sys", server, client->get(), found->devices[kDevices / 2].name, 5, &down_ms)) {
    std::fprintf(stderr, "port-down bench failed\n");
    return 1;
  }
  std::printf("  port down -> updated slice on the server (%d devices, async event): median %.1f ms, "
              "max %.1f ms over %zu\n", kDevices, Percentile(down_ms, 0.5), Percentile(down_ms, 1.0),
              down_ms.size());
  return 0;
}
