// Integration: the fake kubelet drives the real daemon over unix-socket gRPC, with the real
// SysfsDiscovery reading a copy of a fixture tree (modified in place for health flips and
// hot-plug), real inotify and fake link / verbs event sources.
#include "device-plugin/daemon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device-plugin/cdi_spec.h"
#include "device-plugin/uevent.h"
#include "support/fake_kubelet.h"
#include "support/log_capture.h"
#include "unit/device-plugin/fake_event_sources.h"
#include "unit/device-plugin/node_sysfs.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace std::string_literals;
using fake::FakeKubelet;
using Resp = v1beta1::ListAndWatchResponse;

constexpr auto kWait = 10s;

std::vector<std::string> Ids(const Resp& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices()) out.push_back(d.id());
  return out;
}

std::string HealthOf(const Resp& r, const std::string& id) {
  for (const auto& d : r.devices()) {
    if (d.id() == id) return d.health();
  }
  return "absent";
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

using testing::LogCapture;
// The real discovery, counting what the daemon asks of it (thread safe: the test reads the counts
// while the daemon's loop runs).
class CountingDiscovery : public Discovery {
 public:
  explicit CountingDiscovery(std::unique_ptr<Discovery> real) : real_(std::move(real)) {}
  StatusOr<DiscoveryResult> DiscoverAll() override {
    ++all_;
    return real_->DiscoverAll();
  }
  StatusOr<RdmaDevice> DiscoverOne(std::string_view rdma_dev) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      one_.emplace_back(rdma_dev);
    }
    return real_->DiscoverOne(rdma_dev);
  }
  int all() const { return all_.load(); }
  std::vector<std::string> one() const {
    std::lock_guard<std::mutex> lock(mu_);
    return one_;
  }

 private:
  std::unique_ptr<Discovery> real_;
  std::atomic<int> all_{0};
  mutable std::mutex mu_;
  std::vector<std::string> one_;
};

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpXXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    kubelet_dir_ = root_ + "/k";
    fs::create_directories(kubelet_dir_);
    fs::create_directories(root_ + "/cfg");
    kubelet_ = std::make_unique<FakeKubelet>(kubelet_dir_);
    metrics_ = std::make_unique<Metrics>(root_ + "/sys");
  }

  void TearDown() override {
    StopDaemon();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  void UseFixture(const std::string& name) {
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name, root_ + "/sys",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }

  // Replaces the config file atomically (as kubectl cp / an editor's rename would).
  void WriteConfig(const std::string& json) {
    WriteFile(root_ + "/cfg/.tmp", json);
    fs::rename(root_ + "/cfg/.tmp", config_path());
  }

  std::string config_path() const { return root_ + "/cfg/config.json"; }
  std::string sys(const std::string& rel) const { return root_ + "/sys/" + rel; }

  Status StartDaemon(bool start_kubelet = true) {
    if (start_kubelet) RDMAK8S_RETURN_IF_ERROR(kubelet_->Start());
    options_.config_path = config_path();
    options_.kubelet_dir = kubelet_dir_;
    options_.plugins_registry_dir = root_ + "/registry";
    options_.sysfs_root = root_ + "/sys";
    options_.dev_root = "/host/dev";
    options_.cdi_dir = root_ + "/cdi";
    options_.register_timeout = register_timeout_;
    DaemonDeps deps;
    auto discovery = std::make_unique<CountingDiscovery>(
        std::make_unique<SysfsDiscovery>(DiscoveryOptions{root_ + "/sys", nullptr}));
    discovery_ = discovery.get();
    deps.discovery = std::move(discovery);
    deps.netns_mode = [this]() -> StatusOr<RdmaNetnsMode> { return netns_mode_.load(); };
    auto links = std::make_unique<FakeLinkMonitor>();
    links_ = links.get();
    deps.link_monitor = std::move(links);
    auto events = std::make_unique<FakeDeviceEventSource>();
    events_ = events.get();
    deps.device_events = std::move(events);
    if (uevent_fd_ >= 0) deps.uevents = NewUeventSourceOnFd(std::exchange(uevent_fd_, -1));
    deps.metrics = metrics_.get();
    deps.before_socket_rename = before_socket_rename_;
    daemon_ = std::make_unique<Daemon>(options_, std::move(deps));
    RDMAK8S_RETURN_IF_ERROR(daemon_->Start());
    thread_ = std::thread([this] { run_status_ = daemon_->Run(); });
    return Status::Ok();
  }

  void StopDaemon() {
    if (!daemon_) return;
    daemon_->Stop();
    if (thread_.joinable()) thread_.join();
    daemon_.reset();
  }

  std::optional<Resp> WaitFor(const std::string& resource,
                              const std::function<bool(const Resp&)>& pred) {
    return kubelet_->WaitForDevices(resource, pred, kWait);
  }

  // The metrics text once it holds `needle`, or as it is after kWait. The daemon's loop records
  // what happened after the fake kubelet saw it (a Register is counted when its reply is back on
  // the loop), so a scrape right after a kubelet-side wait can be early.
  std::string ScrapeWhen(const std::string& needle) {
    std::string text = metrics_->Scrape();
    for (auto until = std::chrono::steady_clock::now() + kWait;
         text.find(needle) == std::string::npos && std::chrono::steady_clock::now() < until;
         text = metrics_->Scrape()) {
      std::this_thread::sleep_for(5ms);
    }
    return text;
  }

  std::string root_;
  std::string kubelet_dir_;
  std::chrono::milliseconds register_timeout_ = 3000ms;
  int uevent_fd_ = -1;  // when set: the daemon's uevent source reads this socket
  std::function<void(const std::string&)> before_socket_rename_;
  std::unique_ptr<FakeKubelet> kubelet_;
  DaemonOptions options_;
  std::atomic<RdmaNetnsMode> netns_mode_{RdmaNetnsMode::kExclusive};
  FakeLinkMonitor* links_ = nullptr;
  FakeDeviceEventSource* events_ = nullptr;
  CountingDiscovery* discovery_ = nullptr;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<Daemon> daemon_;
  std::thread thread_;
  Status run_status_;
};

constexpr char kSriovConfig[] = R"({"pools": [
  {"name": "vfs", "mode": "exclusive", "selectors": {"isVF": true}},
  {"name": "pf", "mode": "shared", "capacity": 2, "selectors": {"vendors": ["15b3"]}}]})";

TEST_F(DaemonTest, ServesThenRegistersEachPoolAndAdvertisesTheFixture) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  // The fake kubelet dials back inside Register and refuses a plugin that is not serving yet.
  for (const auto& e : kubelet_->Events()) EXPECT_EQ(e.find("failed"), std::string::npos) << e;
  for (const auto& r : kubelet_->Registrations()) {
    EXPECT_EQ(r.version(), "v1beta1");
    EXPECT_TRUE(fs::exists(kubelet_dir_ + "/" + r.endpoint())) << r.endpoint();
  }
  auto vfs = WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; });
  ASSERT_TRUE(vfs);
  EXPECT_EQ(Ids(*vfs), (std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"}));
  ASSERT_EQ(vfs->devices(0).topology().nodes_size(), 1);
  EXPECT_EQ(vfs->devices(0).topology().nodes(0).id(), 1);
  auto pf = WaitFor("rdma/pf", [](const Resp& r) { return r.devices_size() == 4; });
  ASSERT_TRUE(pf);
  EXPECT_EQ(Ids(*pf), (std::vector<std::string>{"mlx5_0-0", "mlx5_0-1", "mlx5_3-0", "mlx5_3-1"}));
  EXPECT_EQ(HealthOf(*pf, "mlx5_0-0"), "Healthy");
}

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

TEST_F(DaemonTest, PortDownThroughLinkEventFlipsHealthAndBack) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
  WriteFile(sys("class/net/veth0/operstate"), "down\n");
  links_->Inject("veth0", false);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Unhealthy"; }));
  WriteFile(sys("class/net/veth0/operstate"), "up\n");
  links_->Inject("veth0", true);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
}

TEST_F(DaemonTest, PortErrorAsyncEventFlipsHealth) {
  UseFixture("mlx5_ib_2port");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Healthy"; }));
  EXPECT_EQ(events_->watched(), std::vector<std::string>{"mlx5_0"});
  WriteFile(sys("class/infiniband/mlx5_0/ports/1/state"), "1: DOWN\n");
  events_->Inject({"mlx5_0", 1, "port error"});
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Unhealthy"; }));
  WriteFile(sys("class/infiniband/mlx5_0/ports/1/state"), "4: ACTIVE\n");
  events_->Inject({"mlx5_0", 1, "port active"});
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "0000:3b:00.0") == "Healthy"; }));
}

TEST_F(DaemonTest, VanishedDeviceTurnsUnhealthyAndHotPluggedDeviceIsAdded) {
  UseFixture("mlx5_roce_sriov");
  // mlx5_2 is "not plugged in" at start.
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2"}; }));

  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  links_->Inject("ens1f0v1", true);  // a netdev the plugin does not know: rescan
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"} &&
           HealthOf(r, "0000:5e:00.3") == "Healthy";
  }));

  // Hot-unplugged: the VF's bus device goes with it.
  fs::rename(sys("class/infiniband/mlx5_1"), root_ + "/mlx5_1.link");
  fs::rename(sys("bus/pci/devices/0000:5e:00.2"), root_ + "/vf.link");
  links_->Inject("ens1f0v0", false, LinkEvent::Type::kDel);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));

  // It comes back (VF re-created, driver re-bound): Healthy again, same ID.
  fs::rename(root_ + "/vf.link", sys("bus/pci/devices/0000:5e:00.2"));
  fs::rename(root_ + "/mlx5_1.link", sys("class/infiniband/mlx5_1"));
  links_->Inject("ens1f0v0", true);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"} && HealthOf(r, "0000:5e:00.2") == "Healthy";
  }));
}

// RDMA netns mode exclusive: our CNI moved the VF's RDMA device (and sriov-cni its netdev) into a
// pod; the node no longer shows either, as the kernel hides them. A pod holds the device: it must
// stay Healthy (allocatable, and the pod's own status), whatever event makes the daemon look.
TEST_F(DaemonTest, DeviceMovedIntoAPodStaysHealthyAndIsReReadWhenItComesHome) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Healthy"; }));
  testing::NodeSysfs node(root_ + "/sys", root_ + "/pod");
  ASSERT_TRUE(node.MoveToPod("mlx5_1", {"ens1f0v0"}));
  links_->Inject("ens1f0v0", false, LinkEvent::Type::kDel);  // the netdev left the node
  events_->Inject({"mlx5_1", 0, "device fatal"});           // the move disassociates our context
  // A port going down elsewhere, on the same event source: the marker that the fatal event was
  // handled (both are read in one go, and a fatal event re-reads every device).
  WriteFile(sys("class/infiniband/mlx5_2/ports/1/state"), "1: DOWN\n");
  events_->Inject({"mlx5_2", 1, "port error"});
  auto r = WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.3") == "Unhealthy"; });
  ASSERT_TRUE(r);
  EXPECT_EQ(Ids(*r), (std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"}));
  EXPECT_EQ(HealthOf(*r, "0000:5e:00.2"), "Healthy");
  auto a = kubelet_->Allocate("rdma/vfs", {{"0000:5e:00.2"}});
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(events_->watched(), (std::vector<std::string>{"mlx5_0", "mlx5_2", "mlx5_3"}));

  // Back home (DEL), with its port down meanwhile: re-read, so kubelet sees what it is now.
  std::ofstream(node.InPod("class/infiniband/mlx5_1") + "/ports/1/state") << "1: DOWN\n";
  ASSERT_TRUE(node.ComeHome("mlx5_1", {"ens1f0v0"}));
  links_->Inject("ens1f0v0", true);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));
}

// A soft device has no bus device: moved into the pod it stays Healthy too.
TEST_F(DaemonTest, SoftDeviceMovedIntoAPodStaysHealthy) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
  testing::NodeSysfs node(root_ + "/sys", root_ + "/pod");
  ASSERT_TRUE(node.MoveToPod("rxe0"));
  daemon_->Rescan();
  // The marker: veth0 going down is still seen on the node (the device is judged by it).
  WriteFile(sys("class/net/veth0/operstate"), "down\n");
  links_->Inject("veth0", false);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Unhealthy"; }));
  WriteFile(sys("class/net/veth0/operstate"), "up\n");
  links_->Inject("veth0", true);
  auto r = WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; });
  ASSERT_TRUE(r);
  EXPECT_EQ(Ids(*r), std::vector<std::string>{"rxe0"});
}

// A port attribute that is not "<n>: <name>" (here a number no int holds) is an error handled on
// the event loop: the device turns Unhealthy ("unreadable") and the loop goes on.
TEST_F(DaemonTest, MalformedPortStateOnALinkEventMakesTheDeviceUnreadableNotTheLoopDie) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
  WriteFile(sys("class/infiniband/rxe0/ports/1/state"), "99999999999999999999: ACTIVE\n");
  links_->Inject("veth0", true);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Unhealthy"; }));
  WriteFile(sys("class/infiniband/rxe0/ports/1/state"), "4: ACTIVE\n");
  links_->Inject("veth0", true);
  ASSERT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
}

// Every pod's veth shows up as a new netdev on the node: one we don't own must not cost a full
// rescan (nor reopen every verbs context).
TEST_F(DaemonTest, NewNetdevWithoutAnRdmaDeviceCostsNoRescan) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; }));
  const int rescans = discovery_->all(), watches = events_->watch_calls();
  links_->Inject("veth3a9f1c2e", true);  // no such netdev in sysfs any more, or no RDMA under it
  links_->Inject("lo", true);            // exists, no bus device
  // The marker, on the same event source: a port of a known device goes down.
  WriteFile(sys("class/infiniband/mlx5_1/ports/1/state"), "1: DOWN\n");
  links_->Inject("ens1f0v0", false);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));
  EXPECT_EQ(discovery_->all(), rescans);
  EXPECT_EQ(events_->watch_calls(), watches);
}

// A new netdev that does carry an RDMA device (a VF's netdev appearing): only that device is read.
TEST_F(DaemonTest, NewNetdevWithAnRdmaDeviceReadsOnlyThatDevice) {
  UseFixture("mlx5_roce_sriov");
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 1; }));
  const int rescans = discovery_->all();
  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  links_->Inject("ens1f0v1", true);
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return r.devices_size() == 2 && HealthOf(r, "0000:5e:00.3") == "Healthy";
  }));
  EXPECT_EQ(discovery_->all(), rescans);
  EXPECT_EQ(discovery_->one(), std::vector<std::string>{"mlx5_2"});
  // Its async events are listened to as well.
  for (auto until = std::chrono::steady_clock::now() + kWait;
       events_->watched().size() != 4 && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(events_->watched(), (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
}

TEST_F(DaemonTest, PeriodicRescanFindsWhatNoEventReported) {
  UseFixture("mlx5_roce_sriov");
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  options_.rescan_interval = 1s;
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2"}; }));
  // No event at all: only the safety-net rescan can see these.
  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"}; }));
  WriteFile(sys("class/infiniband/mlx5_1/ports/1/state"), "1: DOWN\n");
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.2") == "Unhealthy"; }));
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

// `rdma link add` on an existing netdev, or an RDMA driver loaded after its netdev: no link event,
// only the kernel's uevent for the infiniband device (bytes as the kernel sends them).
TEST_F(DaemonTest, RdmaDeviceRegisteredWithoutANewNetdevIsFoundThroughItsUevent) {
  UseFixture("mlx5_roce_sriov");
  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  WriteConfig(kSriovConfig);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
  uevent_fd_ = sv[0];
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"0000:5e:00.2"}; }));

  fs::rename(root_ + "/mlx5_2.link", sys("class/infiniband/mlx5_2"));
  std::string add =
      "add@/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.3/infiniband/mlx5_2\0ACTION=add\0"
      "DEVPATH=/devices/pci0000:5d/0000:5d:00.0/0000:5e:00.3/infiniband/mlx5_2\0"
      "SUBSYSTEM=infiniband\0NAME=mlx5_2\0SEQNUM=1\0"s;
  ASSERT_EQ(write(sv[1], add.data(), add.size()), static_cast<ssize_t>(add.size()));
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) {
    return Ids(r) == std::vector<std::string>{"0000:5e:00.2", "0000:5e:00.3"} && HealthOf(r, "0000:5e:00.3") == "Healthy";
  }));
  // Published first, then the new device's async events are listened to.
  const std::vector<std::string> all = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
  for (auto until = std::chrono::steady_clock::now() + kWait;
       events_->watched() != all && std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(events_->watched(), all);

  fs::rename(sys("class/infiniband/mlx5_2"), root_ + "/mlx5_2.link");
  std::string rm = "remove@/devices/virtual/infiniband/mlx5_2\0ACTION=remove\0SUBSYSTEM=infiniband\0NAME=mlx5_2\0"s;
  ASSERT_EQ(write(sv[1], rm.data(), rm.size()), static_cast<ssize_t>(rm.size()));
  ASSERT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return HealthOf(r, "0000:5e:00.3") == "Unhealthy"; }));
  close(sv[1]);
}

TEST_F(DaemonTest, ValidConfigChangeAddsAndRemovesPoolsWithoutRestart) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(R"({"pools": [{"name": "vfs", "mode": "exclusive", "selectors": {"isVF": true}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  WriteConfig(R"({"pools": [{"name": "sf", "mode": "exclusive", "selectors": {"rdmaDevices": ["mlx5_3"]}}]})");
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/sf", 1, kWait));
  ASSERT_TRUE(WaitFor("rdma/sf", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"mlx5_core.sf.2"}; }));
  EXPECT_EQ(daemon_->Resources(), std::vector<std::string>{"rdma/sf"});
  EXPECT_FALSE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-vfs.sock"));
}

TEST_F(DaemonTest, InvalidConfigChangeIsRejectedAndRunningConfigKept) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  PluginConfig before = daemon_->config();
  WriteConfig(R"({"pools": [{"name": "vfs", "mode": "exclusiv", "selectors": {}}]})");
  // Wait for the rejection itself (bounded), then check nothing changed.
  auto deadline = std::chrono::steady_clock::now() + kWait;
  while (daemon_->rejected_reloads() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(daemon_->rejected_reloads(), 1);
  EXPECT_EQ(daemon_->config(), before);
  EXPECT_EQ(daemon_->Resources(), (std::vector<std::string>{"rdma/pf", "rdma/vfs"}));
  EXPECT_NE(metrics_->Scrape().find("rdmak8s_config_reloads_total{result=\"error\"} 1"), std::string::npos);
}

TEST_F(DaemonTest, ConfigMapSymlinkSwapIsPickedUp) {
  UseFixture("mlx5_roce_sriov");
  // The kubelet's ConfigMap layout: config.json -> ..data/config.json, ..data -> ..<timestamp>.
  fs::create_directories(root_ + "/cfg/..v1");
  WriteFile(root_ + "/cfg/..v1/config.json",
            R"({"pools": [{"name": "a", "mode": "exclusive", "selectors": {"rdmaDevices": ["mlx5_0"]}}]})");
  fs::create_symlink("..v1", root_ + "/cfg/..data");
  fs::create_symlink("..data/config.json", config_path());
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/a", 1, kWait));

  fs::create_directories(root_ + "/cfg/..v2");
  WriteFile(root_ + "/cfg/..v2/config.json",
            R"({"pools": [{"name": "b", "mode": "exclusive", "selectors": {"rdmaDevices": ["mlx5_0"]}}]})");
  fs::create_symlink("..v2", root_ + "/cfg/..data_tmp");
  fs::rename(root_ + "/cfg/..data_tmp", root_ + "/cfg/..data");
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/b", 1, kWait));
  EXPECT_EQ(daemon_->Resources(), std::vector<std::string>{"rdma/b"});
}

TEST_F(DaemonTest, ReloadRequestAppliesEditedConfig) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(WaitFor("rdma/pf", [](const Resp& r) { return r.devices_size() == 4; }));
  // Same file rewritten in place with a new capacity: the pool restarts with 3 IDs per device.
  std::string cfg = kSriovConfig;
  cfg.replace(cfg.find("\"capacity\": 2"), 13, "\"capacity\": 3");
  WriteConfig(cfg);
  daemon_->Reload();
  ASSERT_TRUE(WaitFor("rdma/pf", [](const Resp& r) { return r.devices_size() == 6; }));
}

TEST_F(DaemonTest, KubeletRestartDeletingSocketsIsSurvived) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 2, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 2, kWait));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  std::printf("re-registered both pools %lld ms after the kubelet restart\n",
              static_cast<long long>(ms.count()));
  // The new stream carries the full list again.
  EXPECT_TRUE(WaitFor("rdma/vfs", [](const Resp& r) { return r.devices_size() == 2; }));
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-vfs.sock"));
}

// A kubelet restart is routine: the new kubelet clears its directory (kubelet.sock and our
// sockets) and listens again. Nothing about it deserves a warning.
TEST_F(DaemonTest, KubeletRestartIsLoggedAtInfoAsAKubeletStarting) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  std::string log;
  {
    LogCapture capture;
    ASSERT_TRUE(kubelet_->Restart().ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
    log = capture.Text();
  }
  EXPECT_EQ(log.find("\nW "), std::string::npos) << log;
  EXPECT_NE(log.find("I kubelet.sock removed: a kubelet is starting"), std::string::npos) << log;
  EXPECT_EQ(log.find("kubelet stopped"), std::string::npos) << log;
}

// Our socket removed by anything but a kubelet restart (rm, an old plugin process shutting
// down): kubelet never dials a socket that is gone, so serving again is not enough.
TEST_F(DaemonTest, RemovedSocketIsServedAndRegisteredAgain) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  ASSERT_TRUE(fs::remove(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  EXPECT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return HealthOf(r, "rxe0") == "Healthy"; }));
}

// The plugin starting while a kubelet starts: the kubelet's sweep of its directory removes the
// plugin's private socket name between bind and rename. The plugin binds again and registers;
// it does not exit.
TEST_F(DaemonTest, StartingWhileAKubeletSweepsItsDirectoryStillServesAndRegisters) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  std::atomic<int> swept{0};
  before_socket_rename_ = [&swept](const std::string& staging) {
    if (swept.load() == 0 && unlink(staging.c_str()) == 0) swept++;
  };
  Status s = StartDaemon();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(swept.load(), 1);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
}

// Serving again after our socket was removed can fail (the directory swept on every attempt):
// the loop tries again on its own, since no other event would bring the socket back, and
// registers once it serves.
TEST_F(DaemonTest, SocketThatCouldNotBeServedAgainIsRetriedThenRegistered) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  std::atomic<bool> sweeping{false};
  std::atomic<int> swept{0};
  before_socket_rename_ = [&](const std::string& staging) {
    if (sweeping.load() && unlink(staging.c_str()) == 0 && ++swept == 5) sweeping = false;
  };
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  LogCapture log;
  sweeping = true;
  ASSERT_TRUE(fs::remove(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait)) << log.Text();
  EXPECT_EQ(swept.load(), 5);
  EXPECT_NE(log.Text().find("E re-serve rdma/p: serve " + kubelet_dir_ + "/rdmak8s-rdma-p.sock"),
            std::string::npos) << log.Text();
  EXPECT_NE(log.Text().find("retrying in 1s"), std::string::npos) << log.Text();
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
}

// A DaemonSet rolling update: the new process serves and registers while the old one is still
// shutting down on the same directory. The old one stopping must not delete the new socket.
TEST_F(DaemonTest, AnOldInstanceStoppingLeavesTheNewInstancesSocket) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));

  DaemonDeps deps;
  deps.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{root_ + "/sys", nullptr});
  deps.netns_mode = []() -> StatusOr<RdmaNetnsMode> { return RdmaNetnsMode::kExclusive; };
  Daemon next(options_, std::move(deps));
  ASSERT_TRUE(next.Start().ok());
  Status next_status;
  std::thread next_thread([&] { next_status = next.Run(); });
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));

  const std::string name = "rdmak8s-rdma-p.sock";
  int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(ifd, 0);
  ASSERT_GE(inotify_add_watch(ifd, kubelet_dir_.c_str(), IN_DELETE | IN_MOVED_FROM), 0);
  StopDaemon();  // the old instance
  EXPECT_TRUE(run_status_.ok());
  alignas(inotify_event) char buf[4096];
  std::vector<std::string> removed;
  for (ssize_t n; (n = read(ifd, buf, sizeof(buf))) > 0;) {
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      if (ev->len != 0) removed.push_back(ev->name);
      p += sizeof(inotify_event) + ev->len;
    }
  }
  close(ifd);
  EXPECT_EQ(std::count(removed.begin(), removed.end(), name), 0) << "the old instance removed it";
  EXPECT_TRUE(fs::exists(kubelet_dir_ + "/" + name));
  auto alloc = kubelet_->Allocate("rdma/p", {{"rxe0"}});
  EXPECT_TRUE(alloc.ok()) << alloc.status().ToString();

  next.Stop();
  next_thread.join();
  EXPECT_TRUE(next_status.ok());
  EXPECT_FALSE(fs::exists(kubelet_dir_ + "/" + name));
}

// kubelet marks every device Unhealthy when a ListAndWatch stream ends: a reload that keeps
// the pool's resource and mode (here: only the capacity changes) updates the open stream.
TEST_F(DaemonTest, ReloadKeepingResourceAndModeUpdatesTheOpenStream) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  // Both pools registered before the reload (they register one after the other): what is
  // counted after it is then only what the reload caused.
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/vfs", 1, kWait));
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  ASSERT_TRUE(WaitFor("rdma/pf", [](const Resp& r) { return r.devices_size() == 4; }));
  std::string cfg = kSriovConfig;
  cfg.replace(cfg.find("\"capacity\": 2"), 13, "\"capacity\": 3");
  cfg.replace(cfg.find("\"vendors\": [\"15b3\"]"), 19, "\"vendors\": [\"15b3\", \"8086\"]");
  WriteConfig(cfg);
  auto pf = WaitFor("rdma/pf", [](const Resp& r) { return r.devices_size() == 6; });
  ASSERT_TRUE(pf);
  EXPECT_EQ(HealthOf(*pf, "mlx5_0-2"), "Healthy");
  for (const auto& e : kubelet_->Events()) EXPECT_EQ(e.find("closed"), std::string::npos) << e;
  EXPECT_EQ(kubelet_->Registrations().size(), 2u) << "one per pool: nothing re-registered";
  EXPECT_EQ(daemon_->config().pools[1].capacity, 3);
}

TEST_F(DaemonTest, TwoPoolsSettingNcclEnvAreAWarningAtStart) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(R"({"pools": [
    {"name": "vfs", "mode": "exclusive", "selectors": {"isVF": true}, "allocate": {"ncclEnv": true}},
    {"name": "pf", "selectors": {"vendors": ["15b3"]}, "allocate": {"ncclEnv": true}}]})");
  std::string log;
  {
    LogCapture capture;
    ASSERT_TRUE(StartDaemon().ok());
    log = capture.Text();
  }
  EXPECT_NE(log.find("W config: pools vfs and pf both set NCCL_IB_HCA (ncclEnv)"), std::string::npos) << log;
}

TEST_F(DaemonTest, ConfigInTheKubeletDirDoesNotHideKubeletRestarts) {
  UseFixture("rxe_veth");
  // One directory, one inotify watch: the config's watch must add to the socket watch's mask.
  std::string cfg = kubelet_dir_ + "/config.json";
  WriteFile(cfg, R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(kubelet_->Start().ok());
  options_.config_path = cfg;
  DaemonDeps deps;
  deps.discovery = std::make_unique<SysfsDiscovery>(DiscoveryOptions{root_ + "/sys", nullptr});
  options_.kubelet_dir = kubelet_dir_;
  options_.plugins_registry_dir = root_ + "/registry";
  options_.sysfs_root = root_ + "/sys";
  daemon_ = std::make_unique<Daemon>(options_, std::move(deps));
  ASSERT_TRUE(daemon_->Start().ok());
  thread_ = std::thread([this] { run_status_ = daemon_->Run(); });
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 2, kWait));
  EXPECT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"rxe0"}; }));
  // And the config is still watched.
  WriteFile(kubelet_dir_ + "/.tmp", R"({"pools": [{"name": "q", "mode": "exclusive", "selectors": {}}]})");
  fs::rename(kubelet_dir_ + "/.tmp", cfg);
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/q", 1, kWait));
}

// A kubelet.sock nobody answers on: bound and listening but never accepting (kubelet starting),
// or a stale file (kubelet died). Registering then waits for the whole timeout (a minute here);
// meanwhile the event loop must go on handling health changes and stopping.
class DaemonStaleKubeletTest : public DaemonTest, public ::testing::WithParamInterface<bool> {};

TEST_P(DaemonStaleKubeletTest, UnansweredKubeletSocketDoesNotStallTheEventLoop) {
  const bool listening = GetParam();
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = kubelet_dir_ + "/kubelet.sock";
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  if (listening) {
    ASSERT_EQ(listen(fd, 16), 0);
  } else {
    close(fd);  // the file stays: connecting is refused
    fd = -1;
  }
  register_timeout_ = 60000ms;
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());

  // A health change is published while Register still waits on kubelet.sock.
  WriteFile(sys("class/net/veth0/operstate"), "down\n");
  links_->Inject("veth0", false);
  const std::string unhealthy = "rdmak8s_pool_devices{health=\"Unhealthy\",resource=\"rdma/p\"} 1\n";
  std::string text = ScrapeWhen(unhealthy);
  EXPECT_NE(text.find(unhealthy), std::string::npos) << text;
  EXPECT_EQ(metrics_->Unready(), "not registered with kubelet: rdma/p");

  // Stopping (what SIGTERM does) does not wait for the registration either.
  auto stopped = std::async(std::launch::async, [this] {
    daemon_->Stop();
    thread_.join();
  });
  ASSERT_EQ(stopped.wait_for(kWait), std::future_status::ready) << "Run() did not return";
  EXPECT_TRUE(run_status_.ok());
  EXPECT_FALSE(fs::exists(kubelet_dir_ + "/rdmak8s-rdma-p.sock"));
  if (fd >= 0) close(fd);
}

INSTANTIATE_TEST_SUITE_P(Kubelet, DaemonStaleKubeletTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "BoundNotAccepting" : "StaleSocketFile");
                         });

TEST_F(DaemonTest, RegistersWhenKubeletComesUpLater) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());
  EXPECT_TRUE(kubelet_->Registrations().empty());
  ASSERT_TRUE(kubelet_->Start().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
}

TEST_F(DaemonTest, StopRemovesOwnSocketsOnly) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  StopDaemon();
  EXPECT_TRUE(run_status_.ok());
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(kubelet_dir_)) left.push_back(e.path().filename());
  EXPECT_EQ(left, std::vector<std::string>{"kubelet.sock"});
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

TEST_F(DaemonTest, PluginWatcherModeIsChosenWhenOnlyTheRegistryExistsAndKubeletDialsBack) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "mode": "exclusive", "selectors": {}}]})");
  fs::create_directories(root_ + "/registry");
  kubelet_dir_ = root_ + "/no-kubelet-dir";  // absent: auto picks the plugin watcher
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());
  EXPECT_EQ(daemon_->registration_mode(), RegistrationMode::kPluginWatcher);
  std::string sock = daemon_->SocketPath("rdma/p");
  EXPECT_EQ(sock, root_ + "/registry/rdmak8s-rdma-p.sock");
  auto info = kubelet_->RegisterViaPluginWatcher(sock);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->name(), "rdma/p");
  EXPECT_TRUE(WaitFor("rdma/p", [](const Resp& r) { return Ids(r) == std::vector<std::string>{"rxe0"}; }));
}

// One HTTP/1.0 GET on the loopback; the whole response (status line, headers, body).
std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n";
    (void)!write(fd, req.data(), req.size());
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

std::string Body(const std::string& response) {
  size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
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

TEST_F(DaemonTest, HealthzAnswers503UntilEveryPoolIsRegisteredWithKubeletThen200) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "p", "selectors": {}}]})");
  ASSERT_TRUE(metrics_->Serve("127.0.0.1:0").ok());
  int port = metrics_->port();
  ASSERT_GT(port, 0);
  std::string before = HttpGet(port, "/healthz");
  EXPECT_EQ(before.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << before;
  EXPECT_EQ(Body(before), "not serving\n");

  // kubelet's directory exists but kubelet.sock does not: the plugin serves and waits.
  ASSERT_TRUE(StartDaemon(/*start_kubelet=*/false).ok());
  ASSERT_EQ(daemon_->registration_mode(), RegistrationMode::kDevicePlugin);
  std::string waiting = HttpGet(port, "/healthz");
  EXPECT_EQ(waiting.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << waiting;
  EXPECT_EQ(Body(waiting), "not registered with kubelet: rdma/p\n");
  EXPECT_NE(HttpGet(port, "/metrics").find("rdmak8s_ready 0"), std::string::npos);

  ASSERT_TRUE(kubelet_->Start().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/p", 1, kWait));
  // The registration reply reaches kubelet before the daemon records it: wait for the record.
  std::string after;
  for (auto until = std::chrono::steady_clock::now() + kWait; std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(10ms)) {
    after = HttpGet(port, "/healthz");
    if (after.rfind("HTTP/1.1 200", 0) == 0) break;
  }
  EXPECT_EQ(after.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << after;
  EXPECT_EQ(Body(after), "ok\n");

  StopDaemon();
  std::string stopped = HttpGet(port, "/healthz");
  EXPECT_EQ(Body(stopped), "not serving\n") << stopped;
}

TEST_F(DaemonTest, WithCdiAPoolNameThatIsNoCdiClassIsAnErrorAtStart) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": [{"name": "9p", "selectors": {}}]})");
  options_.cdi = true;
  Status s = StartDaemon();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "config " + config_path() +
                             ": $.pools[0].name: \"9p\" cannot be a CDI class (--cdi): it must start with a letter");
}

TEST_F(DaemonTest, InvalidConfigAtStartIsAnError) {
  UseFixture("rxe_veth");
  WriteConfig(R"({"pools": []})");
  Status s = StartDaemon();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "config " + config_path() + ": $.pools: must name at least one pool");
}

}  // namespace
}  // namespace rdmak8s::dp
