// The DRA driver's sockets driven by the fake kubelet over real unix-socket gRPC: plugin-watcher
// registration, NodePrepareResources / NodeUnprepareResources in v1 and v1beta1, the health
// stream.
#include "dra/kubelet/plugin.h"

#include <sys/stat.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rdmak8s/records/pod_devices.h"
#include "unit/dra/kubelet/plugin_fixture.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using plugin_fixture::kDriver;
using plugin_fixture::kPool;
constexpr auto kWait = std::chrono::seconds(10);

class DraPluginTest : public plugin_fixture::PluginFixture {
 protected:
  void SetUp() override { StartPlugin(/*metrics=*/nullptr); }
};

TEST_F(DraPluginTest, RegistersAsDraPluginListingBothVersionsAndHealth) {
  auto info = kubelet_.Register(plugin_->registration_socket());
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->type(), "DRAPlugin");
  EXPECT_EQ(info->name(), kDriver);
  EXPECT_EQ(info->endpoint(), tmp_.path() + "/plugin/dra.sock");
  EXPECT_EQ(std::vector<std::string>(info->supported_versions().begin(), info->supported_versions().end()),
            (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"}));
  EXPECT_EQ(kubelet_.chosen_service(), "v1.DRAPlugin");
  ASSERT_TRUE(plugin_->verdict().has_value());
  EXPECT_TRUE(plugin_->verdict()->registered);
}

TEST_F(DraPluginTest, PreparesAndUnpreparesOverBothVersions) {
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  for (auto api : {fake::DraApi::kV1, fake::DraApi::kV1beta1}) {
    auto prep = kubelet_.NodePrepareResources({{"team", "uid-1", "nic"}}, api);
    ASSERT_TRUE(prep.ok()) << prep.status().message();
    const auto& claim = prep->claims().at("uid-1");
    EXPECT_EQ(claim.error(), "");
    ASSERT_EQ(claim.devices_size(), 1);
    EXPECT_EQ(claim.devices(0).pool_name(), kPool);
    EXPECT_EQ(claim.devices(0).device_name(), "mlx5-0");
    EXPECT_EQ(claim.devices(0).request_names(0), "nic");
    EXPECT_EQ(claim.devices(0).cdi_device_ids(0), "rdma.rdmak8s.io/claim=uid-1-mlx5-0");
    EXPECT_TRUE(fs::exists(tmp_.path() + "/cdi/rdma.rdmak8s.io-claim_uid-1.json"));

    auto unprep = kubelet_.NodeUnprepareResources({{"team", "uid-1", "nic"}}, api);
    ASSERT_TRUE(unprep.ok()) << unprep.status().message();
    EXPECT_EQ(unprep->claims().at("uid-1").error(), "");
    EXPECT_FALSE(fs::exists(tmp_.path() + "/cdi/rdma.rdmak8s.io-claim_uid-1.json"));
  }
}

TEST_F(DraPluginTest, OneFailedClaimIsReportedInItsEntryAndOthersStillPrepare) {
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  auto prep = kubelet_.NodePrepareResources({{"team", "uid-1", "nic"}, {"team", "uid-2", "missing"}});
  ASSERT_TRUE(prep.ok()) << prep.status().message();
  EXPECT_EQ(prep->claims().at("uid-1").error(), "");
  EXPECT_NE(prep->claims().at("uid-2").error().find("team/missing"), std::string::npos);
  auto unprep = kubelet_.NodeUnprepareResources({{"team", "uid-9", "never"}});
  ASSERT_TRUE(unprep.ok());
  EXPECT_EQ(unprep->claims().at("uid-9").error(), "");
}

TEST_F(DraPluginTest, HealthStreamSendsEveryDeviceThenEachChange) {
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  auto healthy = kubelet_.WaitForHealth(
      [](const auto& m) { return m.devices_size() == 1 && m.devices(0).health() == v1alpha1::HEALTHY; }, kWait);
  ASSERT_TRUE(healthy.has_value());
  EXPECT_EQ(healthy->devices(0).device().pool_name(), kPool);
  EXPECT_EQ(healthy->devices(0).device().device_name(), "mlx5-0");
  SetHealth(false);
  EXPECT_TRUE(kubelet_
                  .WaitForHealth([](const auto& m) {
                    return m.devices_size() == 1 && m.devices(0).health() == v1alpha1::UNHEALTHY;
                  }, kWait)
                  .has_value());
}

TEST_F(DraPluginTest, StopRemovesBothSocketsAndARemovedRegistrationSocketIsServedAgain) {
  ASSERT_TRUE(fs::exists(plugin_->registration_socket()));
  fs::remove(plugin_->registration_socket());
  auto again = plugin_->ServeRegistrationAgain();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again);
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  auto unchanged = plugin_->ServeRegistrationAgain();
  ASSERT_TRUE(unchanged.ok());
  EXPECT_FALSE(*unchanged);
  kubelet_.Disconnect();
  plugin_->Stop();
  EXPECT_FALSE(fs::exists(plugin_->registration_socket()));
  EXPECT_FALSE(fs::exists(plugin_->dra_socket()));
}

TEST_F(DraPluginTest, StaleSocketFilesOfADeadInstanceAreReplaced) {
  plugin_->Stop();
  ASSERT_FALSE(fs::exists(plugin_->dra_socket()));
  std::ofstream(plugin_->dra_socket()) << "stale";
  std::ofstream(plugin_->registration_socket()) << "stale";
  DraPlugin next(DraPluginOptions{kDriver, tmp_.path() + "/plugin", tmp_.path() + "/reg", {}}, preparer_.get(),
                 &catalog_);
  ASSERT_TRUE(next.Start().ok());
  struct stat st;
  ASSERT_EQ(stat(next.dra_socket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_TRUE(kubelet_.Register(next.registration_socket()).ok());
  kubelet_.Disconnect();
}

TEST_F(DraPluginTest, StopEndsHealthStreamsButLeavesTheCatalogToItsOwner) {
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  ASSERT_TRUE(kubelet_.WaitForHealth([](const auto& m) { return m.devices_size() == 1; }, kWait).has_value());
  plugin_->Stop();
  EXPECT_FALSE(catalog_.shut_down());
  kubelet_.Disconnect();

  // The driver serves again (a restarted plugin over the same catalog): its health stream
  // still follows the catalog.
  fake::FakeDraKubelet again;
  ASSERT_TRUE(plugin_->Start().ok());
  ASSERT_TRUE(again.Register(plugin_->registration_socket()).ok());
  SetHealth(false);
  EXPECT_TRUE(again
                  .WaitForHealth([](const auto& m) {
                    return m.devices_size() == 1 && m.devices(0).health() == v1alpha1::UNHEALTHY;
                  }, kWait)
                  .has_value());
  again.Disconnect();
}

// kubelet's plugin watcher registers every socket that appears in plugins_registry unless its
// name starts with "."; one bound under a temporary name and renamed away is retried forever.
TEST_F(DraPluginTest, PluginWatcherRegistersTheDriverAndNeverSeesAStagingName) {
  plugin_->Stop();
  fake::FakePluginWatcher watcher(tmp_.path() + "/reg");
  ASSERT_TRUE(watcher.Start().ok());
  ASSERT_TRUE(plugin_->Start().ok());
  fake::FakeDraKubelet* kubelet = watcher.WaitForRegistered(std::string(kDriver) + "-reg.sock", kWait);
  ASSERT_NE(kubelet, nullptr) << "the plugin watcher did not register " << plugin_->registration_socket();
  EXPECT_EQ(kubelet->chosen_service(), "v1.DRAPlugin");
  EXPECT_THAT(watcher.failing(), IsEmpty()) << "sockets kubelet would retry forever";
  EXPECT_EQ(fs::path(StagingPath(plugin_->registration_socket())).filename().string().front(), '.');
  EXPECT_EQ(fs::path(StagingPath(plugin_->dra_socket())).parent_path(), fs::path(plugin_->dra_socket()).parent_path());
  watcher.Stop();
}

// firstAvailable: the allocation names the subrequest ("nic/ib"); the container asks for "nic".
TEST_F(DraPluginTest, FirstAvailableDeviceReachesTheContainerNamingTheParentRequest) {
  reader_.Put(plugin_fixture::AllocatedClaim("fa", "uid-fa", {{"nic/ib", kDriver, kPool, "mlx5-0"}}));
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  for (auto api : {fake::DraApi::kV1, fake::DraApi::kV1beta1}) {
    auto prep = kubelet_.NodePrepareResources({{"team", "uid-fa", "fa"}}, api);
    ASSERT_TRUE(prep.ok()) << prep.status().message();
    const auto& claim = prep->claims().at("uid-fa");
    ASSERT_EQ(claim.error(), "");
    EXPECT_THAT(fake::CdiDevicesForRequest(claim, "nic"),
                ElementsAre("rdma.rdmak8s.io/claim=uid-fa-mlx5-0"));
    EXPECT_THAT(fake::CdiDevicesForRequest(claim, "other"), IsEmpty());
  }
}

// kubelet shows a device Unknown once its latest entry is older than the timeout: the driver
// must keep sending, with fresh times, while nothing changes. The driver's own messages mark
// the time: one arriving 2 s after the first (past kubelet's 1 s timeout) must still read
// Healthy.
TEST_F(DraPluginTest, HealthStaysHealthyPastKubeletsStalenessTimeout) {
  plugin_->Stop();
  DraPluginOptions o{kDriver, tmp_.path() + "/plugin", tmp_.path() + "/reg", {}};
  o.health.resend_interval = std::chrono::milliseconds(200);
  o.health.timeout_seconds = 2;
  DraPlugin plugin(o, preparer_.get(), &catalog_);
  ASSERT_TRUE(plugin.Start().ok());
  fake::FakeDraKubelet kubelet(std::chrono::seconds(1));
  ASSERT_TRUE(kubelet.Register(plugin.registration_socket()).ok());
  EXPECT_TRUE(kubelet.WaitForHealthPast(
      std::chrono::seconds(2),
      [](const fake::FakeDraKubelet& k) { return k.HealthOf(kPool, "mlx5-0") == v1alpha1::HEALTHY; },
      std::chrono::seconds(30)))
      << "no health message 2 s after the first found mlx5-0 Healthy (kubelet would show Unknown)";
  auto latest = kubelet.WaitForHealth([](const auto& m) { return m.devices_size() == 1; }, kWait);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->devices(0).health_check_timeout_seconds(), 2);
  kubelet.Disconnect();
  plugin.Stop();
}

TEST_F(DraPluginTest, HealthMessageSaysWhyADeviceIsUnhealthyOrGone) {
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  SetHealth(false);
  auto down = kubelet_.WaitForHealth(
      [](const auto& m) { return m.devices_size() == 1 && m.devices(0).health() == v1alpha1::UNHEALTHY; }, kWait);
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->devices(0).message(), "mlx5_0: port 1 state DOWN");
  EXPECT_EQ(kubelet_.HealthOf(kPool, "mlx5-0"), v1alpha1::UNHEALTHY);

  catalog_.Update({});  // the device left the node
  auto gone = kubelet_.WaitForHealth(
      [](const auto& m) { return m.devices_size() == 1 && m.devices(0).message() == "device gone"; }, kWait);
  ASSERT_TRUE(gone.has_value()) << "a device that left is not reported";
  EXPECT_EQ(gone->devices(0).device().device_name(), "mlx5-0");
  EXPECT_EQ(gone->devices(0).health(), v1alpha1::UNHEALTHY);

  SetHealth(true);  // back
  EXPECT_TRUE(kubelet_
                  .WaitForHealth([](const auto& m) {
                    return m.devices_size() == 1 && m.devices(0).health() == v1alpha1::HEALTHY &&
                           m.devices(0).message().empty();
                  }, kWait)
                  .has_value());
}

TEST(ToHealthMessageTest, LongReasonsAreCutToKubeletsLimit) {
  CatalogDevice d{"p", "d", std::nullopt, dp::testdev::Ib("mlx5_0", 0), {false, std::string(2000, 'x')},
                  node::Presence::kPresent, 0};
  auto m = ToHealthMessage({d}, 100, 30);
  ASSERT_EQ(m.devices_size(), 1);
  EXPECT_EQ(m.devices(0).message().size(), kMaxHealthMessage);
  EXPECT_EQ(m.devices(0).message().substr(kMaxHealthMessage - 3), "...");
  EXPECT_EQ(m.devices(0).last_updated_time(), 100);
  EXPECT_EQ(m.devices(0).health_check_timeout_seconds(), 30);
}

// How many CDI devices named `id` ("<kind>=<name>") the specs in `cdi_dir` define, as
// containerd reads them: every spec file of the directory; one definition resolves, two fail
// injection ("unresolvable CDI devices").
int CdiDefinitions(const std::string& cdi_dir, const std::string& id) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(cdi_dir)) {
    std::ifstream in(e.path());
    auto spec = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!spec.is_object() || !spec["devices"].is_array()) continue;
    for (const auto& d : spec["devices"]) {
      if (spec.value("kind", "") + "=" + d.value("name", "") == id) ++n;
    }
  }
  return n;
}

// Two instances of the driver under two --driver-name on one node, sharing the CDI, state and
// pod-record directories and plugins_registry, each preparing its device of one claim.
TEST(TwoDriversTest, BothDriversOfOneClaimPrepareAndEachCdiDeviceResolves) {
  testing::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string reg = tmp.path() + "/reg";
  fs::create_directories(reg);
  fs::create_directories(tmp.path() + "/cdi");
  fake::FakeClaimReader reader;
  reader.Put(plugin_fixture::AllocatedClaim(
      "both", "uid-2",
      {{"ib", "ib.rdmak8s.io", kPool, "mlx5-0"}, {"roce", "roce.rdmak8s.io", kPool, "mlx5-1"}},
      "pod-2"));
  struct Driver {
    std::string name;
    DeviceCatalog catalog{kPool};
    std::unique_ptr<Preparer> preparer;
    std::unique_ptr<DraPlugin> plugin;
  };
  std::array<Driver, 2> drivers;
  drivers[0].name = "ib.rdmak8s.io";
  drivers[0].catalog.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {true, ""}, node::Presence::kPresent}}});
  drivers[1].name = "roce.rdmak8s.io";
  drivers[1].catalog.Update(
      {{"mlx5_1", {dp::testdev::Roce("mlx5_1", 1, "eth1"), {true, ""}, node::Presence::kPresent}}});
  auto options = [&](const std::string& driver) {
    PreparerOptions p;
    p.driver_name = driver;
    p.state_dir = tmp.path() + "/state";  // one state directory for both
    p.cdi_dir = tmp.path() + "/cdi";
    p.pod_devices_dir = tmp.path() + "/pods";
    return p;
  };
  fake::FakePluginWatcher watcher(reg);
  ASSERT_TRUE(watcher.Start().ok());
  for (auto& d : drivers) {
    auto prep = Preparer::Create(options(d.name), &reader, &d.catalog);
    ASSERT_TRUE(prep.ok()) << prep.status().message();
    d.preparer = std::move(prep).value();
    d.plugin = std::make_unique<DraPlugin>(
        DraPluginOptions{d.name, tmp.path() + "/plugins/" + d.name, reg, {}}, d.preparer.get(), &d.catalog);
    ASSERT_TRUE(d.plugin->Start().ok());
  }
  std::vector<std::string> ids;
  for (auto& d : drivers) {
    fake::FakeDraKubelet* kubelet = watcher.WaitForRegistered(d.name + "-reg.sock", kWait);
    ASSERT_NE(kubelet, nullptr) << d.name << " was not registered";
    auto prep = kubelet->NodePrepareResources({{"team", "uid-2", "both"}});
    ASSERT_TRUE(prep.ok()) << prep.status().message();
    const auto& claim = prep->claims().at("uid-2");
    ASSERT_EQ(claim.error(), "") << d.name;
    ASSERT_EQ(claim.devices_size(), 1) << d.name;
    ids.push_back(claim.devices(0).cdi_device_ids(0));
  }
  EXPECT_THAT(ids, ElementsAre("ib.rdmak8s.io/claim=uid-2-mlx5-0", "roce.rdmak8s.io/claim=uid-2-mlx5-1"));
  for (const auto& id : ids) EXPECT_EQ(CdiDefinitions(tmp.path() + "/cdi", id), 1) << id;
  EXPECT_THAT(watcher.failing(), IsEmpty());
  // The CNI finds both devices of the claim in the pod's records: one record per driver.
  auto rdma_devs = [&] {
    std::vector<std::string> out;
    auto records = ReadPodClaimRecords(tmp.path() + "/pods", "pod-2");
    EXPECT_TRUE(records.ok()) << records.status().ToString();
    if (!records.ok()) return out;
    for (const auto& r : *records) {
      for (const auto& d : r.devices) out.push_back(d.driver + ":" + d.rdma_dev);
    }
    return out;
  };
  EXPECT_THAT(rdma_devs(), ElementsAre("ib.rdmak8s.io:mlx5_0", "roce.rdmak8s.io:mlx5_1"));

  // A restart of the first driver still knows its half of the claim: the second did not
  // overwrite its checkpoint.
  drivers[0].plugin->Stop();
  auto restarted = Preparer::Create(options(drivers[0].name), &reader, &drivers[0].catalog);
  ASSERT_TRUE(restarted.ok()) << restarted.status().message();
  ASSERT_EQ((*restarted)->Claims().count("uid-2"), 1u);
  EXPECT_EQ((*restarted)->Claims().at("uid-2").devices.at(0).device, "mlx5-0");

  // Unpreparing the second driver's half leaves the first's CDI device in place.
  ASSERT_TRUE(drivers[1].preparer->Unprepare({"team", "uid-2", "both"}).ok());
  EXPECT_EQ(CdiDefinitions(tmp.path() + "/cdi", ids[0]), 1);
  EXPECT_EQ(CdiDefinitions(tmp.path() + "/cdi", ids[1]), 0);
  EXPECT_THAT(rdma_devs(), ElementsAre("ib.rdmak8s.io:mlx5_0"));
  watcher.Stop();
  drivers[1].plugin->Stop();
}

TEST_F(DraPluginTest, EveryKubeletRegistrationReachesTheListenerSoSlicesArePublishedAgain) {
  std::atomic<int> registered{0};
  plugin_->OnRegistration([&](const RegistrationVerdict& v) { registered += v.registered ? 1 : 0; });
  ASSERT_TRUE(kubelet_.Register(plugin_->registration_socket()).ok());
  fake::FakeDraKubelet restarted;  // kubelet restarted: it registers the driver again
  ASSERT_TRUE(restarted.Register(plugin_->registration_socket()).ok());
  EXPECT_EQ(registered.load(), 2);
}

}  // namespace
}  // namespace rdmak8s::dra
