// DRA slice publication (issue 12, "Measured in make bench"): for 1,024 RDMA devices (a
// generated sysfs tree, PF + 7 VFs each), how many ResourceSlices and bytes of JSON they make,
// how long building them takes, and how long publishing them to the fake API server over a
// unix socket takes (first publish: creates; resync with nothing changed: one list, no writes;
// one port down: every slice updated with the new pool generation). Figures, not asserted.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/api/pcie_root.h"
#include "dra/api/slice_publisher.h"
#include "fakes/fake_api_server.h"
#include "rdmak8s/discovery.h"
#include "support/sysfs_builder.h"
#include "support/temp_dir.h"

namespace {
using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
}  // namespace

int main() {
  using namespace rdmak8s;
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
  std::vector<dra::DeviceInput> inputs = dra::DeviceInputsWithPcieRoots(found->devices, tmp.path() + "/sys", nullptr);
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
  return 0;
}
