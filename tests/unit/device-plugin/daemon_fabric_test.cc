// What the daemon tells the node's operators besides kubelet: the NFD feature file (written
// while devices are advertised, replaced when that changes, removed on shutdown or when no pool
// has a device) and the typed fabric counters of its devices in /metrics.
#include <gtest/gtest.h>

#include "unit/device-plugin/daemon_fixture.h"

namespace rdmak8s::dp {
namespace {

using namespace daemon_test;

std::string ReadOr(const std::string& path, const std::string& otherwise) {
  std::ifstream in(path);
  if (!in) return otherwise;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file's text once `pred` holds for it ("<none>" when there is no file), or as it is after
// kWait: the daemon applies a config change on its own loop.
std::string FileWhen(const std::string& path, const std::function<bool(const std::string&)>& pred) {
  std::string text = ReadOr(path, "<none>");
  for (auto until = std::chrono::steady_clock::now() + kWait;
       !pred(text) && std::chrono::steady_clock::now() < until; text = ReadOr(path, "<none>")) {
    std::this_thread::sleep_for(5ms);
  }
  return text;
}

TEST_F(DaemonTest, NfdFeatureFileNamesTheAdvertisedTransportsAndGoesOnShutdown) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  fs::create_directories(root_ + "/features.d");
  WriteFile(root_ + "/check.json", R"({"passed": true, "failures": 0, "checks": []})");
  options_.nfd_features_dir = root_ + "/features.d";
  options_.node_check_results = root_ + "/check.json";
  ASSERT_TRUE(StartDaemon().ok());
  const std::string path = root_ + "/features.d/rdmak8s";
  EXPECT_EQ(ReadOr(path, "<none>"),
            "# rdmak8s-device-plugin: removed when it stops advertising devices\n"
            "rdma.rdmak8s.io/transport-roce=true\n"
            "rdma.rdmak8s.io/netns-mode=exclusive\n"
            "rdma.rdmak8s.io/lossless-ready=true\n")
      << "written before Start returns";
  StopDaemon();
  EXPECT_FALSE(fs::exists(path)) << "a plugin that stopped advertises nothing";
}

TEST_F(DaemonTest, NfdFeatureFileIsRemovedWhileNoPoolHasADevice) {
  UseFixture("mlx5_ib_2port");
  WriteConfig(R"({"pools": [{"name": "none", "selectors": {"vendors": ["8086"]}}]})");
  fs::create_directories(root_ + "/features.d");
  options_.nfd_features_dir = root_ + "/features.d";
  ASSERT_TRUE(StartDaemon().ok());
  const std::string path = root_ + "/features.d/rdmak8s";
  EXPECT_FALSE(fs::exists(path));
  WriteConfig(R"({"pools": [{"name": "ib", "selectors": {}}]})");
  std::string text = FileWhen(path, [](const std::string& t) { return t != "<none>"; });
  EXPECT_NE(text.find("rdma.rdmak8s.io/transport-ib=true\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("lossless-ready"), std::string::npos) << "no check results: no label";
  WriteConfig(R"({"pools": [{"name": "none", "selectors": {"vendors": ["8086"]}}]})");
  EXPECT_EQ(FileWhen(path, [](const std::string& t) { return t == "<none>"; }), "<none>");
}

TEST_F(DaemonTest, MetricsCarryTypedFabricCountersWithTheRdmaDriver) {
  UseFixture("mlx5_roce_sriov");
  WriteConfig(kSriovConfig);
  ASSERT_TRUE(StartDaemon().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrations("rdma/pf", 1, kWait));
  std::string text = ScrapeWhen("rdmak8s_rdma_counter_total{device=\"mlx5_0\"");
  EXPECT_NE(text.find("rdmak8s_rdma_counter_total{device=\"mlx5_0\",port=\"1\",driver=\"mlx5_ib\","
                      "counter=\"np_cnp_sent\",kind=\"cnp_sent\"} 45617\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rdmak8s_port_active{device=\"mlx5_0\",port=\"1\",driver=\"mlx5_ib\"} 1\n"),
            std::string::npos);
}

}  // namespace
}  // namespace rdmak8s::dp
