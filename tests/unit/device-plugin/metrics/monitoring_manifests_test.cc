// manifests/monitoring/: the Grafana dashboard parses as JSON and the alert rules as a
// PrometheusRule, and every metric they query is one the plugin exports: a real scrape of the
// plugin's Metrics over the mlx5 RoCE fixture, a fake ethtool and a node check results file, so
// renaming a family or a counter kind fails here, not on an operator's empty dashboard.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device-plugin/metrics/counter_names.h"
#include "device-plugin/metrics/metrics.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::dp {
namespace {

const std::string kDir = std::string(RDMAK8S_SOURCE_DIR) + "/manifests/monitoring";

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PfcEthtool : public EthtoolStats {
 public:
  StatusOr<NamedStats> Read(const std::string&) override {
    return NamedStats{{"rx_prio3_pause", 5}, {"tx_prio3_pause", 7}};
  }
};

// The names of the samples (not just the # TYPE lines) of a scrape with every source present.
std::set<std::string> ExportedSampleNames() {
  rdmak8s::testing::TempDir tmp;
  const std::string check = tmp.path() + "/check.json";
  std::ofstream(check) << R"({"passed": true, "failures": 0, "checks": [
      {"subject": "node", "check": "memlock", "result": "pass", "seen": "unlimited",
       "want": null, "fix": null, "note": null}]})";
  PfcEthtool ethtool;
  Metrics m(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_roce_sriov");
  m.SetFabricSources(&ethtool, check);
  m.SetCounterDevices({{"mlx5_0", "mlx5_ib", Transport::kRoce, {1}}});
  m.SetPoolDevices("rdma/p", {1, 1, 1, 1});
  m.CountAllocation("rdma/p", true);
  m.CountRegistration("rdma/p", true);
  m.CountConfigReload(true);
  m.ObserveDiscovery(0.01);
  std::set<std::string> names;
  std::istringstream lines(m.Scrape());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  return names;
}

std::set<std::string> KindNames() {
  std::set<std::string> out;
  for (int k = 0; k <= static_cast<int>(CounterKind::kXmitWait); ++k) {
    out.insert(std::string(CounterKindName(static_cast<CounterKind>(k))));
  }
  return out;
}

// Every rdmak8s_* metric and every counter kind an expression names must exist.
void ExpectQueriesExported(const std::string& where, const std::string& expr,
                           const std::set<std::string>& exported) {
  static const std::regex kMetric(R"(\brdmak8s_[A-Za-z0-9_]+)");
  static const std::regex kKind(R"re(kind=~?"([^"]+)")re");
  static const std::set<std::string> kinds = KindNames();
  for (std::sregex_iterator it(expr.begin(), expr.end(), kMetric), end; it != end; ++it) {
    EXPECT_TRUE(exported.count(it->str())) << where << ": " << it->str() << " is not exported";
  }
  for (std::sregex_iterator it(expr.begin(), expr.end(), kKind), end; it != end; ++it) {
    std::stringstream alts((*it)[1].str());
    for (std::string k; std::getline(alts, k, '|');) {
      EXPECT_TRUE(kinds.count(k)) << where << ": kind \"" << k << "\" is no counter kind";
    }
  }
}

TEST(MonitoringManifestsTest, DashboardIsGrafanaJsonQueryingOnlyExportedMetrics) {
  const std::set<std::string> exported = ExportedSampleNames();
  nlohmann::json d = nlohmann::json::parse(Read(kDir + "/grafana-dashboard.json"), nullptr, false);
  ASSERT_FALSE(d.is_discarded()) << "grafana-dashboard.json does not parse";
  ASSERT_TRUE(d["panels"].is_array());
  std::string all;
  int queries = 0;
  for (const auto& p : d["panels"]) {
    if (p.value("type", "") == "row") continue;
    ASSERT_TRUE(p["targets"].is_array()) << p.value("title", "");
    for (const auto& t : p["targets"]) {
      const std::string expr = t.value("expr", "");
      ExpectQueriesExported(p.value("title", ""), expr, exported);
      all += expr + "\n";
      ++queries;
    }
  }
  for (const auto& v : d["templating"]["list"]) {
    if (v.contains("definition")) ExpectQueriesExported(v["name"], v["definition"], exported);
  }
  EXPECT_GE(queries, 9);
  // What the dashboard is for: port state, CNP, ECN, retransmits, PFC per priority, the node
  // check, device health.
  for (const char* needle : {"rdmak8s_port_active", "kind=~\"cnp_sent|cnp_handled\"",
                             "kind=\"ecn_marked\"", "retransmit", "rdmak8s_pfc_pause_frames_total",
                             "priority", "rdmak8s_node_check", "rdmak8s_pool_devices"}) {
    EXPECT_NE(all.find(needle), std::string::npos) << needle;
  }
}

TEST(MonitoringManifestsTest, AlertRulesAreAPrometheusRuleQueryingOnlyExportedMetrics) {
  const std::set<std::string> exported = ExportedSampleNames();
  YAML::Node doc;
  ASSERT_NO_THROW(doc = YAML::LoadFile(kDir + "/prometheus-rules.yaml"));
  EXPECT_EQ(doc["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  EXPECT_EQ(doc["kind"].as<std::string>(), "PrometheusRule");
  std::set<std::string> alerts;
  for (const auto& g : doc["spec"]["groups"]) {
    ASSERT_TRUE(g["name"]) << "a group without a name";
    for (const auto& r : g["rules"]) {
      const std::string alert = r["alert"].as<std::string>();
      EXPECT_TRUE(alerts.insert(alert).second) << alert << " twice";
      ExpectQueriesExported(alert, r["expr"].as<std::string>(), exported);
      EXPECT_TRUE(r["for"]) << alert;
      EXPECT_TRUE(r["labels"]["severity"]) << alert;
      EXPECT_TRUE(r["annotations"]["summary"]) << alert;
    }
  }
  for (const char* a : {"RdmaDeviceUnhealthy", "RdmaPortDown", "RdmaPfcPauseStorm",
                        "RdmaCnpRateHigh", "RdmaNodeCheckFailing"}) {
    EXPECT_TRUE(alerts.count(a)) << a;
  }
}

TEST(MonitoringManifestsTest, TheExportCheckCatchesAMetricThePluginDoesNotHave) {
  static const std::set<std::string> exported = ExportedSampleNames();  // static: EXPECT_*_FAILURE
  EXPECT_TRUE(exported.count("rdmak8s_pfc_pause_frames_total"));
  EXPECT_TRUE(exported.count("rdmak8s_node_check"));
  EXPECT_FALSE(exported.count("rdmak8s_pfc_pause_total"));
  EXPECT_NONFATAL_FAILURE(
      ExpectQueriesExported("t", "rate(rdmak8s_pfc_pause_total[5m])", exported),
      "rdmak8s_pfc_pause_total is not exported");
  EXPECT_NONFATAL_FAILURE(
      ExpectQueriesExported("t", "rdmak8s_rdma_counter_total{kind=\"cnp\"}", exported),
      "kind \"cnp\" is no counter kind");
}

}  // namespace
}  // namespace rdmak8s::dp
