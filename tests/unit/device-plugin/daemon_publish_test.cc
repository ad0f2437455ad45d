// What each pool publishes (pool_publisher.h, through the daemon): the fixtures' devices with
// health over ListAndWatch, Allocate and GetPreferredAllocation on them, the netns-mode check of
// exclusive pools, CDI specs and the metrics.
#include <gtest/gtest.h>

#include "unit/device-plugin/daemon_fixture.h"

namespace rdmak8s::dp {
namespace {

using namespace daemon_test;

struct FixtureCase {
  const char* fixture;
  const char* config;
  std::vector<std::pair<std::string, std::string>> devices;  // id, health
};
// Shown by gtest (and ctest) in place of the struct's raw bytes.
void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.fixture; }

class DaemonFixtureTest : public DaemonTest, public ::testing::WithParamInterface<FixtureCase> {};

TEST_P(DaemonFixtureTest, ListAndWatchShowsTheFixtureDevicesWithHealth) {
  UseFixture(GetParam().fixture);
  WriteConfig(GetParam().config);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  auto r = WaitFor("rdma/p", [](const Resp&) { return true; });
  ASSERT_TRUE(r);
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& d : r->devices()) got.emplace_back(d.id(), d.health());
  EXPECT_EQ(got, GetParam().devices);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, DaemonFixtureTest,
    ::testing::Values(
        FixtureCase{"mlx5_ib_2port",
                    R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {"linkTypes": ["infiniband"]}}]})",
                    {{"0000:3b:00.0", "Healthy"}}},
        FixtureCase{"mlx5_roce_sriov",
                    R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {"pfNames": ["ens1f0np0"], "isVF": true}}]})",
                    {{"0000:5e:00.2", "Healthy"}, {"0000:5e:00.3", "Healthy"}}},
        FixtureCase{"irdma_iwarp",
                    R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {"transports": ["iwarp"]}}]})",
                    {{"0000:b1:00.0", "Healthy"}}},
        FixtureCase{"irdma_roce",
                    R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {"drivers": ["irdma"]}}]})",
                    {{"0000:b1:00.1", "Healthy"}}},
        FixtureCase{"cxgb4_iwarp",
                    R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {"drivers": ["cxgb4"]}}]})",
                    {{"0000:02:00.4", "Healthy"}}},
        FixtureCase{"bnxt_re_roce",
                    R"({"pools": [{"name": "p", "capacity": 3, "selectors": {"transports": ["roce"]}}]})",
                    {{"bnxt_re0-0", "Healthy"}, {"bnxt_re0-1", "Healthy"}, {"bnxt_re0-2", "Healthy"}}},
        FixtureCase{"rxe_veth",
                    R"({"pools": [{"name": "p", "capacity": 2, "selectors": {"drivers": ["rxe"]}}]})",
                    {{"rxe0-0", "Healthy"}, {"rxe0-1", "Healthy"}}},
        FixtureCase{"siw_veth",
                    R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {"transports": ["iwarp"]}}]})",
                    {{"siw0", "Healthy"}}},
        FixtureCase{"efa_unknown", R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})",
                    {{"0000:00:06.0", "Healthy"}}},
        FixtureCase{"no_rdma", R"({"pools": [{"name": "p", "selectors": {}}]})", {}}),
    [](const ::testing::TestParamInfo<FixtureCase>& info) { return std::string(info.param.fixture); });

std::vector<std::string> ContainerPaths(const v1beta1::ContainerAllocateResponse& c) {
  std::vector<std::string> out;
  for (const auto& d : c.devices()) out.push_back(d.container_path());
  return out;
}

struct AllocCase {
  const char* fixture;
  const char* config;
  const char* id;
  std::vector<std::string> paths;
};
void PrintTo(const AllocCase& c, std::ostream* os) { *os << c.fixture << " " << c.id; }

class DaemonAllocateTest : public DaemonTest, public ::testing::WithParamInterface<AllocCase> {};

TEST_P(DaemonAllocateTest, AllocateGivesTheTransportsCharDevices) {
  UseFixture(GetParam().fixture);
  WriteConfig(GetParam().config);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  auto resp = kubelet_->Allocate("rdma/p", {{GetParam().id}});
  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  ASSERT_EQ(resp->container_responses_size(), 1);
  const auto& c = resp->container_responses(0);
  EXPECT_EQ(ContainerPaths(c), GetParam().paths);
  for (const auto& d : c.devices()) {
    EXPECT_EQ(d.host_path(), "/host/dev" + d.container_path().substr(4));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Transports, DaemonAllocateTest,
    ::testing::Values(
        AllocCase{"mlx5_ib_2port",
                  R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})", "0000:3b:00.0",
                  {"/dev/infiniband/uverbs0", "/dev/infiniband/umad0", "/dev/infiniband/umad1",
                   "/dev/infiniband/rdma_cm"}},
        AllocCase{"mlx5_ib_2port",
                  R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}, "allocate": {"issm": true}}]})",
                  "0000:3b:00.0",
                  {"/dev/infiniband/uverbs0", "/dev/infiniband/umad0", "/dev/infiniband/umad1",
                   "/dev/infiniband/issm0", "/dev/infiniband/issm1", "/dev/infiniband/rdma_cm"}},
        AllocCase{"bnxt_re_roce", R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})",
                  "0000:41:00.0", {"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"}},
        AllocCase{"bnxt_re_roce",
                  R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}, "allocate": {"roceUmad": true}}]})",
                  "0000:41:00.0",
                  {"/dev/infiniband/uverbs0", "/dev/infiniband/umad0", "/dev/infiniband/rdma_cm"}},
        AllocCase{"irdma_iwarp",
                  R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}, "allocate": {"roceUmad": true}}]})",
                  "0000:b1:00.0", {"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"}},
        AllocCase{"siw_veth", R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})",
                  "siw0", {"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"}}),
    [](const ::testing::TestParamInfo<AllocCase>& info) {
      return std::string(info.param.fixture) + "_" + std::to_string(info.index);
    });

TEST_F(DaemonTest, SharedCapacityIdsAllAllocateTheSameDevice) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "soft", "capacity": 4, "selectors": {},
                   "allocate": {"ncclEnv": true, "ucxEnv": true}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/soft", [](const Resp& r) { return r.devices_size() == 4; }));
  auto a = kubelet_->Allocate("rdma/soft", {{"rxe0-0"}, {"rxe0-3"}});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  for (const auto& c : a->container_responses()) {
    EXPECT_EQ(c.envs().at("RDMAK8S_SOFT_DEVICES"), "rxe0");
    EXPECT_EQ(c.envs().at("NCCL_IB_HCA"), "=rxe0");
    EXPECT_EQ(c.envs().at("UCX_NET_DEVICES"), "rxe0:1");
    EXPECT_EQ(ContainerPaths(c),
              (std::vector<std::string>{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"}));
  }
}

// kubelet v1.36.2 merges the env of a container's Allocate answers and keeps ONE value of a key
// two answers set (it logs "Environment variable has conflicting setting"): with ncclEnv on two
// pools, a container given devices of both lost one pool's HCAs from NCCL_IB_HCA. Now no key is
// written twice: NCCL_IB_HCA is left to NCCL (unset, it uses every device the container has) and
// each pool names its own devices.
TEST_F(DaemonTest, AContainerOfTwoNcclPoolsGetsEveryDeviceNamedAndNoEnvConflict) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(R"({"pools": [
    {"name": "vfs", "mode": "exclusive", "selectors": {"isVF": true},
     "allocate": {"ncclEnv": true, "ucxEnv": true}},
    {"name": "pf", "mode": "exclusive", "selectors": {"vendors": ["15b3"]},
     "allocate": {"ncclEnv": true, "ucxEnv": true}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  auto vfs = kubelet_->WaitForHealthy("rdma/vfs", 1, {}, kWait);
  auto pf = kubelet_->WaitForHealthy("rdma/pf", 1, {}, kWait);
  ASSERT_TRUE(vfs && pf);
  const std::string vf_id = vfs->devices(0).id();
  const std::string pf_id = pf->devices(0).id();
  auto c = kubelet_->AllocateContainer({{"rdma/vfs", {vf_id}}, {"rdma/pf", {pf_id}}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->conflicts, std::vector<std::string>{});
  ASSERT_EQ(c->responses.size(), 2u);
  const std::string vf_dev = c->responses[0].envs().at("RDMAK8S_VFS_DEVICES");
  const std::string pf_dev = c->responses[1].envs().at("RDMAK8S_PF_DEVICES");
  EXPECT_FALSE(vf_dev.empty());
  EXPECT_FALSE(pf_dev.empty());
  EXPECT_NE(vf_dev, pf_dev);
  EXPECT_EQ(c->envs.at("RDMAK8S_VFS_DEVICES"), vf_dev);
  EXPECT_EQ(c->envs.at("RDMAK8S_PF_DEVICES"), pf_dev);
  EXPECT_EQ(c->envs.count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(c->envs.count("UCX_NET_DEVICES"), 0u);
  // What NCCL and UCX use instead: the container's device nodes, one uverbs per device.
  int uverbs = 0;
  for (const auto& r : c->responses) {
    for (const auto& d : r.devices()) uverbs += d.container_path().find("uverbs") != std::string::npos;
  }
  EXPECT_EQ(uverbs, 2);
}

// The fake kubelet merges env like kubelet: a key two Allocate answers set keeps the first value,
// and the conflict is logged, not refused.
TEST_F(DaemonTest, TwoPoolsSettingOneStaticEnvKeyKeepOneValueInAContainer) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(R"({"pools": [
    {"name": "vfs", "mode": "exclusive", "selectors": {"isVF": true}, "allocate": {"env": {"X": "1"}}},
    {"name": "pf", "mode": "exclusive", "selectors": {"vendors": ["15b3"]},
     "allocate": {"env": {"X": "2"}}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  auto vfs = kubelet_->WaitForHealthy("rdma/vfs", 1, {}, kWait);
  auto pf = kubelet_->WaitForHealthy("rdma/pf", 1, {}, kWait);
  ASSERT_TRUE(vfs && pf);
  auto c = kubelet_->AllocateContainer({{"rdma/vfs", {vfs->devices(0).id()}},
                                        {"rdma/pf", {pf->devices(0).id()}}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->envs.at("X"), "1");
  EXPECT_EQ(c->conflicts, std::vector<std::string>{"X: kept 1, dropped 2"});
}

TEST_F(DaemonTest, ExclusivePoolIsUnhealthyWhileNetnsModeIsShared) {
  netns_mode_ = RdmaNetnsMode::kShared;
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  auto vfs = WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; });
  ASSERT_TRUE(vfs);
  EXPECT_EQ(HealthOf(*vfs, "0000:5e:00.2"), "Unhealthy");
  auto pf = WaitFor("rdma/pf", [](const Resp& r) { return r.devices_size() == 4; });
  ASSERT_TRUE(pf);
  EXPECT_EQ(HealthOf(*pf, "mlx5_0-0"), "Healthy") << "shared pools do not care";
  auto a = kubelet_->Allocate("rdma/vfs", {{"0000:5e:00.2"}});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("the node's RDMA netns mode is shared"), std::string::npos)
      << a.status().message();

  netns_mode_ = RdmaNetnsMode::kExclusive;
  daemon_->Rescan();
  EXPECT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Healthy"; }));
}

TEST_F(DaemonTest, PreferredAllocationHonoursMustIncludeOverGrpc) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; }));
  ASSERT_TRUE(kubelet_->Options("rdma/vfs")->get_preferred_allocation_available());
  auto p = kubelet_->GetPreferredAllocation("rdma/vfs", {"0000:5e:00.2", "0000:5e:00.3"}, {"0000:5e:00.3"}, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->container_responses(0).deviceids(0), "0000:5e:00.3");
  p = kubelet_->GetPreferredAllocation("rdma/pf", {"mlx5_3-1", "mlx5_0-1", "mlx5_0-0", "mlx5_3-0"}, {}, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(std::vector<std::string>(p->container_responses(0).deviceids().begin(),
                                     p->container_responses(0).deviceids().end()),
            (std::vector<std::string>{"mlx5_0-0", "mlx5_3-0"}));
}

TEST_F(DaemonTest, CdiSpecFollowsHotPlugAndHealth) {
  UseFixture("mlx5_roce_sriov");
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  options_.cdi = true;
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 1; }));
  auto cdi_devices = [&] {
    std::ifstream in(CdiSpecPath(root_ + "/cdi", "rdma/vfs"));
    nlohmann::json spec = nlohmann::json::parse(in);
    std::vector<std::string> names;
    for (const auto& d : spec["devices"]) names.push_back(d["name"]);
    return names;
  };
  EXPECT_EQ(cdi_devices(), std::vector<std::string>{"mlx5_1"});
  auto mtime = fs::last_write_time(CdiSpecPath(root_ + "/cdi", "rdma/vfs"));

  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  links_->Inject("ens1f0v1", true);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; }));
  EXPECT_EQ(cdi_devices(), (std::vector<std::string>{"mlx5_1", "mlx5_2"})) << "written before ListAndWatch";

  // A health flip changes what kubelet sees; the spec (device nodes) stays as it is, and a
  // device that is merely unhealthy keeps its CDI entry so running containers still resolve.
  mtime = fs::last_write_time(CdiSpecPath(root_ + "/cdi", "rdma/vfs"));
  WriteFile(sys("class/infiniband/mlx5_2/ports/1/state"), "1: DOWN\n");
  events_->Inject({"mlx5_2", 1, "port error"});
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.3") == "Unhealthy"; }));
  EXPECT_EQ(cdi_devices(), (std::vector<std::string>{"mlx5_1", "mlx5_2"}));
  EXPECT_EQ(fs::last_write_time(CdiSpecPath(root_ + "/cdi", "rdma/vfs")), mtime) << "unchanged: not rewritten";
}

TEST_F(DaemonTest, CdiModeWritesSpecAndAnswersWithCdiNames) {
  UseFixture("mlx5_ib_2port");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  options_.cdi = true;
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  std::ifstream in(CdiSpecPath(root_ + "/cdi", "rdma/p"));
  ASSERT_TRUE(in.good());
  auto spec = nlohmann::json::parse(in);
  EXPECT_EQ(spec["kind"], "rdma/p");
  EXPECT_EQ(spec["devices"][0]["name"], "mlx5_0");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["deviceNodes"][0]["hostPath"],
            "/host/dev/infiniband/uverbs0");
  auto a = kubelet_->Allocate("rdma/p", {{"0000:3b:00.0"}});
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->container_responses(0).cdi_devices_size(), 1);
  EXPECT_EQ(a->container_responses(0).cdi_devices(0).name(), "rdma/p=mlx5_0");
  EXPECT_EQ(a->container_responses(0).devices_size(), 0);
}

TEST_F(DaemonTest, MetricsCountDevicesAllocationsAndPortCounters) {
  UseFixture("mlx5_ib_2port");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  ASSERT_TRUE(kubelet_->Allocate("rdma/p", {{"0000:3b:00.0"}}).ok());
  std::string text = ScrapeWhen("rdmak8s_registrations_total{resource=\"rdma/p\",result=\"ok\"} 1");
  EXPECT_NE(text.find("rdmak8s_pool_devices{health=\"Healthy\",resource=\"rdma/p\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmak8s_allocations_total{resource=\"rdma/p\",result=\"ok\"} 1"), std::string::npos);
  EXPECT_NE(text.find("rdmak8s_registrations_total{resource=\"rdma/p\",result=\"ok\"} 1"), std::string::npos);
  EXPECT_NE(text.find("rdmak8s_discovery_duration_seconds_count"), std::string::npos);
  EXPECT_NE(text.find("rdmak8s_port_counter{rdma_dev=\"mlx5_0\",port=\"1\",counter=\"port_xmit_data\","
                      "source=\"counters\"} 987654321"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rdmak8s_port_counter{rdma_dev=\"mlx5_0\",port=\"1\",counter=\"out_of_buffer\","
                      "source=\"hw_counters\"} 7"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rdmak8s_port_counter{rdma_dev=\"mlx5_0\",port=\"2\",counter=\"symbol_error\","
                      "source=\"counters\"} 3"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("counter=\"lifespan\""), std::string::npos) << "lifespan is not a counter";
}

TEST_F(DaemonTest, SharedPoolMetricsCountDistinctDevicesAndAdvertisedIdsApart) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(R"({"pools": [{"name": "p", "capacity": 50, "selectors": {"isVF": true}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return r.devices_size() == 100; }));
  std::string text = metrics_->Scrape();
  // Two VFs, 50 IDs each: 2 devices, 100 IDs (lines end at the value: "} 2" is not "} 200").
  EXPECT_NE(text.find("rdmak8s_pool_devices{health=\"Healthy\",resource=\"rdma/p\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmak8s_pool_devices{health=\"Unhealthy\",resource=\"rdma/p\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmak8s_pool_ids{health=\"Healthy\",resource=\"rdma/p\"} 100\n"), std::string::npos) << text;

  // One VF is unplugged (its bus device goes too): 1 healthy + 1 unhealthy device, 50 + 50 IDs.
  fs::rename(sys("class/infiniband/mlx5_1"), root_ + "/mlx5_1.link");
  fs::remove(sys("bus/pci/devices/0000:5e:00.2"));
  links_->Inject("ens1f0v0", false, LinkEvent::Type::kDel);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "mlx5_1-0") == "Unhealthy"; }));
  text = metrics_->Scrape();
  EXPECT_NE(text.find("rdmak8s_pool_devices{health=\"Healthy\",resource=\"rdma/p\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmak8s_pool_devices{health=\"Unhealthy\",resource=\"rdma/p\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmak8s_pool_ids{health=\"Unhealthy\",resource=\"rdma/p\"} 50\n"), std::string::npos) << text;
}

TEST_F(DaemonTest, MetricsExportRxeHwCountersButNotLifespan) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  std::string text = metrics_->Scrape();
  EXPECT_NE(text.find("rdmak8s_port_counter{rdma_dev=\"rxe0\",port=\"1\",counter=\"sent_pkts\","
                      "source=\"hw_counters\"} 5120"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("counter=\"out_of_seq_request\",source=\"hw_counters\"} 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("source=\"counters\""), std::string::npos) << "rxe has no counters/";
  EXPECT_EQ(text.find("counter=\"lifespan\""), std::string::npos) << "lifespan is not a counter";
}

TEST_F(DaemonTest, MetricsAndHealthzAreServedOverHttp) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "selectors": {}}]})");
  ASSERT_TRUE(metrics_->Serve("127.0.0.1:0").ok());
  ASSERT_GT(metrics_->port(), 0);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  // The registration thread reports kubelet's answer to the loop just after kubelet got it.
  std::string healthz;
  for (auto until = std::chrono::steady_clock::now() + kWait; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(10ms)) {
    healthz = HttpGet(metrics_->port(), "/healthz");
    if (healthz.rfind("HTTP/1.1 200", 0) == 0) break;
  }
  EXPECT_EQ(healthz.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << healthz;
  EXPECT_EQ(Body(healthz), "ok\n");
  std::string metrics = HttpGet(metrics_->port(), "/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << metrics;
  for (const char* family : {"rdmak8s_pool_devices", "rdmak8s_registrations_total", "rdmak8s_discovery_duration_seconds",
                             "rdmak8s_port_counter", "rdmak8s_ready"}) {
    EXPECT_NE(metrics.find(std::string("# TYPE ") + family + " "), std::string::npos) << family;
  }
  EXPECT_NE(metrics.find("rdmak8s_pool_devices{health=\"Healthy\",resource=\"rdma/p\"} 1\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("rdmak8s_ready 1"), std::string::npos) << metrics;
  std::string other = HttpGet(metrics_->port(), "/other");
  EXPECT_EQ(other.substr(0, other.find("\r\n")).substr(8), " 404 Not Found") << other;
}

}  // namespace
}  // namespace rdmak8s::dp
