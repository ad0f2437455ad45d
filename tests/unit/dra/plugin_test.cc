// The DRA driver's sockets driven by the fake kubelet over real unix-socket gRPC: plugin-watcher
// registration, NodePrepareResources / NodeUnprepareResources in v1 and v1beta1, the health
// stream.
#include "dra/plugin.h"

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "fakes/fake_claim_reader.h"
#include "fakes/fake_dra_kubelet.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kPool[] = "node-a";
constexpr auto kWait = std::chrono::seconds(10);

class DraPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    PreparerOptions p;
    p.driver_name = kDriver;
    p.state_dir = tmp_.path() + "/state";
    p.cdi_dir = tmp_.path() + "/cdi";
    p.pod_devices_dir = tmp_.path() + "/pods";
    fs::create_directories(p.cdi_dir);
    fs::create_directories(tmp_.path() + "/reg");
    SetHealth(true);
    auto prep = Preparer::Create(p, &reader_, &catalog_);
    ASSERT_TRUE(prep.ok()) << prep.status().message();
    preparer_ = std::move(prep).value();
    plugin_ = std::make_unique<DraPlugin>(
        DraPluginOptions{kDriver, tmp_.path() + "/plugin", tmp_.path() + "/reg"}, preparer_.get(), &catalog_);
    ASSERT_TRUE(plugin_->Start().ok());

    ResourceClaim c;
    c.namespace_name = "team";
    c.name = "nic";
    c.uid = "uid-1";
    c.allocated = true;
    c.results = {{"nic", kDriver, kPool, "mlx5-0"}};
    c.reserved_for = {{"", "pods", "p", "pod-1"}};
    reader_.Put(c);
  }
  void SetHealth(bool healthy) {
    catalog_.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {healthy, healthy ? "" : "port 1 state DOWN"},
                                 dp::Presence::kPresent}}});
  }

  testing::TempDir tmp_;
  fake::FakeClaimReader reader_;
  DeviceCatalog catalog_{kPool};
  std::unique_ptr<Preparer> preparer_;
  std::unique_ptr<DraPlugin> plugin_;
  fake::FakeDraKubelet kubelet_;
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
    EXPECT_TRUE(fs::exists(tmp_.path() + "/cdi/rdmak8s-dra-uid-1.json"));

    auto unprep = kubelet_.NodeUnprepareResources({{"team", "uid-1", "nic"}}, api);
    ASSERT_TRUE(unprep.ok()) << unprep.status().message();
    EXPECT_EQ(unprep->claims().at("uid-1").error(), "");
    EXPECT_FALSE(fs::exists(tmp_.path() + "/cdi/rdmak8s-dra-uid-1.json"));
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
  DraPlugin next(DraPluginOptions{kDriver, tmp_.path() + "/plugin", tmp_.path() + "/reg"}, preparer_.get(),
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
