// The fabric's counters as a scrape reads them (device-plugin/metrics/fabric_metrics.h): RDMA port
// counters of the mlx5, irdma and bnxt_re fixture trees (names from the kernel's drivers), port
// state, PFC pause frames through a fake ethtool, and the node check's last results file.
#include "device-plugin/metrics/fabric_metrics.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "device-plugin/metrics/node_check_results.h"
#include "support/planted_files.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  return std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name;
}

class FakeEthtool : public EthtoolStats {
 public:
  StatusOr<NamedStats> Read(const std::string& netdev) override {
    ++reads[netdev];
    auto it = stats.find(netdev);
    if (it == stats.end()) return NotFoundError("ethtool " + netdev + ": No such device");
    return it->second;
  }
  std::map<std::string, NamedStats> stats;
  std::map<std::string, int> reads;
};

std::string Scrape(const FabricMetrics& m) {
  return prometheus::TextSerializer().Serialize(m.Collect());
}

bool Has(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(FabricMetricsTest, Mlx5RoceCongestionCountersAreCountersWithTheirKindAndDriver) {
  FabricMetrics m(FabricSources{Fixture("mlx5_roce_sriov"), nullptr, ""});
  m.SetDevices({{"mlx5_0", "mlx5_ib", Transport::kRoce, {1}}});
  std::string text = Scrape(m);
  EXPECT_NE(text.find("# TYPE rdmak8s_rdma_counter_total counter"), std::string::npos);
  const std::string p = "rdmak8s_rdma_counter_total{device=\"mlx5_0\",port=\"1\",driver=\"mlx5_ib\",";
  EXPECT_TRUE(Has(text, p + "counter=\"np_cnp_sent\",kind=\"cnp_sent\"} 45617")) << text;
  EXPECT_TRUE(Has(text, p + "counter=\"rp_cnp_handled\",kind=\"cnp_handled\"} 38211"));
  EXPECT_TRUE(Has(text, p + "counter=\"np_ecn_marked_roce_packets\",kind=\"ecn_marked\"} 91234"));
  EXPECT_TRUE(Has(text, p + "counter=\"out_of_sequence\",kind=\"out_of_sequence\"} 112"));
  EXPECT_TRUE(Has(text, p + "counter=\"roce_adp_retrans\",kind=\"retransmit\"} 27"));
  EXPECT_TRUE(Has(text, p + "counter=\"port_xmit_discards\",kind=\"discard\"} 17"))
      << "counters/ (PMA) too";
  EXPECT_TRUE(Has(text, p + "counter=\"rx_write_requests\",kind=\"other\"} 8000000"))
      << "a counter without a kind is exported generically";
  EXPECT_EQ(text.find("counter=\"lifespan\""), std::string::npos);
  EXPECT_TRUE(Has(text, "rdmak8s_port_counter{rdma_dev=\"mlx5_0\",port=\"1\",counter=\"np_cnp_sent\","
                        "source=\"hw_counters\"} 45617"))
      << "the raw family stays";
}

TEST(FabricMetricsTest, IrdmaAndBnxtReCountersUseTheKernelsNamesAndBnxtResourcesAreGauges) {
  FabricMetrics irdma(FabricSources{Fixture("irdma_roce"), nullptr, ""});
  irdma.SetDevices({{"irdma1", "irdma", Transport::kRoce, {1}}});
  std::string text = Scrape(irdma);
  EXPECT_TRUE(Has(text, "rdmak8s_rdma_counter_total{device=\"irdma1\",port=\"1\",driver=\"irdma\","
                        "counter=\"cnpSent\",kind=\"cnp_sent\"} 2560"))
      << text;
  EXPECT_TRUE(Has(text, "rdmak8s_rdma_counter_total{device=\"irdma1\",port=\"1\",driver=\"irdma\","
                        "counter=\"RxECNMrkd\",kind=\"ecn_marked\"} 5120"));

  FabricMetrics bnxt(FabricSources{Fixture("bnxt_re_roce"), nullptr, ""});
  bnxt.SetDevices({{"bnxt_re0", "bnxt_re", Transport::kRoce, {1}}});
  text = Scrape(bnxt);
  const std::string p = "{device=\"bnxt_re0\",port=\"1\",driver=\"bnxt_re\",";
  EXPECT_TRUE(Has(text, "rdmak8s_rdma_counter_total" + p + "counter=\"to_retransmits\",kind=\"retransmit\"} 14"))
      << text;
  EXPECT_TRUE(Has(text, "rdmak8s_rdma_counter_total" + p + "counter=\"np_cnp_pkts\",kind=\"cnp_sent\"} 1500"));
  EXPECT_TRUE(Has(text, "rdmak8s_rdma_resource" + p + "counter=\"active_qps\"} 12"));
  EXPECT_EQ(text.find("rdmak8s_rdma_counter_total" + p + "counter=\"active_qps\""), std::string::npos)
      << "a resource count is no counter: rate() of it is meaningless";
}

TEST(FabricMetricsTest, PortActiveFollowsThePortStateOnEveryScrape) {
  rdmak8s::testing::TempDir tmp;
  fs::copy(Fixture("mlx5_ib_2port"), tmp.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  FabricMetrics m(FabricSources{tmp.path(), nullptr, ""});
  m.SetDevices({{"mlx5_0", "mlx5_ib", Transport::kIb, {1, 2}}});
  std::string text = Scrape(m);
  EXPECT_TRUE(Has(text, "rdmak8s_port_active{device=\"mlx5_0\",port=\"1\",driver=\"mlx5_ib\"} 1")) << text;
  EXPECT_TRUE(Has(text, "rdmak8s_port_active{device=\"mlx5_0\",port=\"2\",driver=\"mlx5_ib\"} 0"));

  const std::string port1 = tmp.path() + "/class/infiniband/mlx5_0/ports/1";
  std::ofstream(port1 + "/state") << "1: DOWN\n";
  std::ofstream(port1 + "/counters/link_downed") << "2\n";
  text = Scrape(m);
  EXPECT_TRUE(Has(text, "rdmak8s_port_active{device=\"mlx5_0\",port=\"1\",driver=\"mlx5_ib\"} 0")) << text;
  EXPECT_TRUE(Has(text, "rdmak8s_rdma_counter_total{device=\"mlx5_0\",port=\"1\",driver=\"mlx5_ib\","
                        "counter=\"link_downed\",kind=\"link_downed\"} 2"))
      << "read on scrape, not cached";
}

// A counter file whose text is not wholly a number ("12abc", a driver's or a fixture's bug) is
// left out of the scrape: exporting its leading digits would be a value the kernel never gave.
TEST(FabricMetricsTest, ACounterThatIsNotWhollyANumberIsLeftOut) {
  rdmak8s::testing::TempDir tmp;
  fs::copy(Fixture("mlx5_ib_2port"), tmp.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const std::string counters = tmp.path() + "/class/infiniband/mlx5_0/ports/1/counters/";
  std::ofstream(counters + "link_downed") << "12abc\n";
  std::ofstream(counters + "port_xmit_discards") << "-3\n";
  FabricMetrics m(FabricSources{tmp.path(), nullptr, ""});
  m.SetDevices({{"mlx5_0", "mlx5_ib", Transport::kIb, {1, 2}}});
  const std::string text = Scrape(m);
  EXPECT_EQ(text.find("port=\"1\",driver=\"mlx5_ib\",counter=\"link_downed\""), std::string::npos)
      << text;
  EXPECT_EQ(text.find("port=\"1\",driver=\"mlx5_ib\",counter=\"port_xmit_discards\""),
            std::string::npos)
      << text;
  EXPECT_TRUE(Has(text, "rdmak8s_port_active{device=\"mlx5_0\",port=\"1\",driver=\"mlx5_ib\"} 1"))
      << "the rest of the port is still scraped";
}

TEST(FabricMetricsTest, PfcPauseFramesComeFromThePfNetdevOncePerScrape) {
  FakeEthtool ethtool;
  ethtool.stats["ens1f0np0"] = {{"rx_packets", 100},      {"rx_prio3_pause", 812},
                                {"tx_prio3_pause", 90},   {"rx_prio3_pause_duration", 5},
                                {"rx_prio0_pause", 0},    {"rx_pause_ctrl_phy", 812}};
  FabricMetrics m(FabricSources{Fixture("mlx5_roce_sriov"), &ethtool, ""});
  // The PF and its VF share the PF's netdev (DCB and PFC live there).
  m.SetDevices({{"mlx5_0", "mlx5_ib", Transport::kRoce, {1}},
                {"mlx5_1", "mlx5_ib", Transport::kRoce, {1}}});
  std::string text = Scrape(m);
  EXPECT_NE(text.find("# TYPE rdmak8s_pfc_pause_frames_total counter"), std::string::npos);
  EXPECT_TRUE(Has(text, "rdmak8s_pfc_pause_frames_total{netdev=\"ens1f0np0\",priority=\"3\","
                        "direction=\"rx\",counter=\"rx_prio3_pause\"} 812"))
      << text;
  EXPECT_TRUE(Has(text, "rdmak8s_pfc_pause_frames_total{netdev=\"ens1f0np0\",priority=\"3\","
                        "direction=\"tx\",counter=\"tx_prio3_pause\"} 90"));
  EXPECT_TRUE(Has(text, "rdmak8s_pfc_pause_frames_total{netdev=\"ens1f0np0\",priority=\"0\","
                        "direction=\"rx\",counter=\"rx_prio0_pause\"} 0"));
  EXPECT_EQ(text.find("rx_prio3_pause_duration"), std::string::npos);
  EXPECT_EQ(ethtool.reads["ens1f0np0"], 1);
  (void)Scrape(m);
  EXPECT_EQ(ethtool.reads["ens1f0np0"], 2) << "read on every scrape";
}

TEST(FabricMetricsTest, InfinibandDevicesAndUnreadableNetdevsGiveNoPfcCounters) {
  FakeEthtool ethtool;
  FabricMetrics ib(FabricSources{Fixture("mlx5_ib_2port"), &ethtool, ""});
  ib.SetDevices({{"mlx5_0", "mlx5_ib", Transport::kIb, {1}}});
  std::string text = Scrape(ib);
  EXPECT_TRUE(ethtool.reads.empty()) << "no PFC on InfiniBand: ethtool is not asked";
  FabricMetrics roce(FabricSources{Fixture("bnxt_re_roce"), &ethtool, ""});
  roce.SetDevices({{"bnxt_re0", "bnxt_re", Transport::kRoce, {1}}});
  text = Scrape(roce);
  EXPECT_EQ(ethtool.reads["ens2f0np0"], 1);
  EXPECT_EQ(text.find("rdmak8s_pfc_pause_frames_total{"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmak8s_rdma_counter_total{device=\"bnxt_re0\""), std::string::npos)
      << "the RDMA counters are exported all the same";
}

TEST(FabricMetricsTest, NodeCheckResultsAreAGaugePerCheckSkipsLeftOut) {
  rdmak8s::testing::TempDir tmp;
  const std::string path = tmp.path() + "/node-check.json";
  FabricMetrics m(FabricSources{Fixture("no_rdma"), nullptr, path});
  std::string text = Scrape(m);
  EXPECT_EQ(text.find("\nrdmak8s_node_check_passed "), std::string::npos) << "no file: no check metrics";
  std::ofstream(path) << R"({"passed": false, "failures": 1, "checks": [
    {"subject": "mlx5_0 on ens1f0np0", "check": "pfc", "result": "fail", "seen": "on none",
     "want": "on 3", "fix": "dcb pfc set ...", "note": null},
    {"subject": "mlx5_0 on ens1f0np0", "check": "port state", "result": "pass", "seen": "ACTIVE",
     "want": null, "fix": null, "note": null},
    {"subject": "mlx5_0 on ens1f0np0", "check": "ecn", "result": "skip", "seen": "",
     "want": null, "fix": null, "note": "no ECN knob"}]})";
  text = Scrape(m);
  EXPECT_TRUE(Has(text, "rdmak8s_node_check{subject=\"mlx5_0 on ens1f0np0\",check=\"pfc\"} 0")) << text;
  EXPECT_TRUE(Has(text, "rdmak8s_node_check{subject=\"mlx5_0 on ens1f0np0\",check=\"port state\"} 1"));
  EXPECT_EQ(text.find("check=\"ecn\""), std::string::npos);
  EXPECT_TRUE(Has(text, "rdmak8s_node_check_passed 0"));
  EXPECT_NE(text.find("\nrdmak8s_node_check_timestamp_seconds "), std::string::npos);

  std::ofstream(path) << R"({"passed": tr)";  // caught half written
  text = Scrape(m);
  EXPECT_EQ(text.find("\nrdmak8s_node_check_passed "), std::string::npos) << text;
}

// The results path is a file another job writes: a FIFO there used to block every scrape (and,
// with it, the probes behind the metrics server) in open(2).
TEST(FabricMetricsTest, AFifoOrDirectoryAtTheNodeCheckPathIsRefusedWithoutBlockingTheScrape) {
  rdmak8s::testing::TempDir tmp;
  const std::string path = tmp.path() + "/node-check.json";
  rdmak8s::testing::PlantFifo(path);
  FabricMetrics m(FabricSources{Fixture("no_rdma"), nullptr, path});
  std::string text;
  EXPECT_TRUE(rdmak8s::testing::ReturnsWithoutBlockingOn(path, [&] { text = Scrape(m); }));
  EXPECT_EQ(text.find("\nrdmak8s_node_check_passed "), std::string::npos) << text;
  auto r = ReadNodeCheckResults(path);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "read node check results " + path + ": not a regular file");
  fs::remove(path);
  fs::create_directory(path);
  EXPECT_EQ(ReadNodeCheckResults(path).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadNodeCheckResults(tmp.path() + "/none.json").status().code(), StatusCode::kNotFound);
}

TEST(FabricMetricsTest, ADeviceThatLeftIsLeftOutOfTheScrape) {
  FabricMetrics m(FabricSources{Fixture("no_rdma"), nullptr, ""});
  m.SetDevices({{"mlx5_9", "mlx5_ib", Transport::kRoce, {1}}});
  std::string text = Scrape(m);
  EXPECT_EQ(text.find("mlx5_9"), std::string::npos) << text;
}

}  // namespace
}  // namespace rdmak8s::dp
