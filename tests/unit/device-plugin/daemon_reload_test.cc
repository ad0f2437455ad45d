// The configuration at start and over time (config_watcher.h, through the daemon): file edits,
// ConfigMap symlink swaps and Reload() applied without a restart, in place where the resource
// and mode stay; invalid configs rejected.
#include <gtest/gtest.h>

#include "unit/device-plugin/daemon_fixture.h"

namespace rdmak8s::dp {
namespace {

using namespace daemon_test;

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

TEST_F(DaemonTest, TwoPoolsOptingIntoNcclEnvAreAWarningAtStart) {
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
  EXPECT_NE(log.find("W config: pools vfs, pf all opt into ncclEnv: none sets NCCL_IB_HCA"),
            std::string::npos) << log;
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
