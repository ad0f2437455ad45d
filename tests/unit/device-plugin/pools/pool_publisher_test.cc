// The publishing room without the daemon: tracked devices in, each pool's published state out
// (to a sink that records it, as the pool's server would get it), its CDI spec in a temporary
// dir and its metrics.
#include "device-plugin/pools/pool_publisher.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device-plugin/pools/pool_cdi_spec.h"
#include "node/cdi_spec.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;
using namespace testdev;

constexpr char kBlocked[] =
    "the node's RDMA netns mode is shared, so every pod would see every RDMA device; an "
    "exclusive pool needs `rdma system set netns exclusive`";

// What the pool's server would be handed: the last state, and whether each publish notified.
class RecordingSink : public PoolStateSink {
 public:
  void Publish(std::shared_ptr<const PoolState> state, bool notify) override {
    state_ = std::move(state);
    notified_.push_back(notify);
  }
  const std::shared_ptr<const PoolState>& state() const { return state_; }
  const std::vector<bool>& notified() const { return notified_; }

 private:
  std::shared_ptr<const PoolState> state_;
  std::vector<bool> notified_;
};

PluginConfig Config(std::string_view json) {
  auto cfg = ParseConfig(json);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  return cfg.value_or(PluginConfig{});
}

std::map<std::string, node::TrackedDevice> Devices() {
  std::map<std::string, node::TrackedDevice> out;
  out["mlx5_0"] = node::TrackedDevice{Ib("mlx5_0", 0, "0000:3b:00.0", 0), {}, node::Presence::kPresent};
  out["mlx5_1"] = node::TrackedDevice{Roce("mlx5_1", 1, "ens1f0np0", "0000:5e:00.0", 1), {}, node::Presence::kPresent};
  return out;
}

std::function<StatusOr<RdmaNetnsMode>()> Mode(RdmaNetnsMode m) {
  return [m]() -> StatusOr<RdmaNetnsMode> { return m; };
}

TEST(ExclusiveBlockerTest, OnlyExclusivePoolsCareAboutTheNetnsMode) {
  PluginConfig shared = Config(R"({"pools": [{"name": "s", "selectors": {}}]})");
  PluginConfig excl = Config(R"({"pools": [{"name": "x", "mode": "exclusive", "selectors": {}}]})");
  EXPECT_EQ(ExclusiveBlocker(shared, Mode(RdmaNetnsMode::kShared)), std::nullopt);
  EXPECT_EQ(ExclusiveBlocker(shared, nullptr), std::nullopt);
  EXPECT_EQ(ExclusiveBlocker(excl, Mode(RdmaNetnsMode::kExclusive)), std::nullopt);
  EXPECT_EQ(ExclusiveBlocker(excl, Mode(RdmaNetnsMode::kShared)), kBlocked);
  EXPECT_EQ(ExclusiveBlocker(excl, nullptr), "RDMA netns mode unknown (no RDMA netlink)");
  auto failing = []() -> StatusOr<RdmaNetnsMode> { return UnavailableError("netlink: EPERM"); };
  EXPECT_EQ(ExclusiveBlocker(excl, failing), "cannot read the RDMA netns mode: netlink: EPERM");
}

TEST(BuildPoolStateTest, ABlockerMakesOnlyAnExclusivePoolsHealthyDevicesUnhealthy) {
  auto devices = Devices();
  devices["mlx5_1"].health = {false, "port 1 state DOWN"};
  PublishOptions o;
  o.dev_root = "/host/dev";
  PoolConfig excl;
  excl.name = "x";
  excl.mode = PoolMode::kExclusive;
  auto x = BuildPoolState("rdma/x", excl, {"mlx5_0", "mlx5_1"}, devices, std::string(kBlocked), o);
  EXPECT_EQ(x->resource, "rdma/x");
  EXPECT_EQ(x->dev_root, "/host/dev");
  EXPECT_EQ(x->ids, (std::vector<std::string>{"0000:3b:00.0", "0000:5e:00.0"}));
  EXPECT_EQ(x->devices.at("mlx5_0").health, (node::DeviceHealth{false, kBlocked}));
  EXPECT_EQ(x->devices.at("mlx5_1").health, (node::DeviceHealth{false, "port 1 state DOWN"}))
      << "an unhealthy device keeps its own reason";
  Metrics::PoolCounts c = CountPool(*x);
  EXPECT_EQ(c.unhealthy_devices, 2);
  EXPECT_EQ(c.unhealthy_ids, 2);

  PoolConfig shared;
  shared.name = "s";
  shared.capacity = 2;
  auto s = BuildPoolState("rdma/s", shared, {"mlx5_0"}, devices, std::string(kBlocked), o);
  EXPECT_EQ(s->ids, (std::vector<std::string>{"mlx5_0-0", "mlx5_0-1"}));
  EXPECT_TRUE(s->devices.at("mlx5_0").health.healthy) << "shared pools do not care";
  c = CountPool(*s);
  EXPECT_EQ(c.healthy_devices, 1);
  EXPECT_EQ(c.healthy_ids, 2);
}

class PoolPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = rdmak8s::testing::NewTempDir();
    ASSERT_FALSE(root_.empty());
    metrics_ = std::make_unique<Metrics>(root_ + "/sys");
  }
  void TearDown() override { fs::remove_all(root_); }

  PublishOptions Options(RdmaNetnsMode* mode) {
    PublishOptions o;
    o.cdi = true;
    o.cdi_dir = root_;
    o.metrics = metrics_.get();
    o.netns_mode = [mode]() -> StatusOr<RdmaNetnsMode> { return *mode; };
    return o;
  }

  std::string root_;
  std::unique_ptr<Metrics> metrics_;
};

TEST_F(PoolPublisherTest, EachPoolGetsItsDevicesCdiSpecAndCountsAndABlockerFromTheNextPublish) {
  PluginConfig cfg = Config(R"({"pools": [
      {"name": "ib", "mode": "exclusive", "selectors": {"transports": ["ib"]}},
      {"name": "rest", "capacity": 2, "selectors": {}}]})");
  RdmaNetnsMode mode = RdmaNetnsMode::kExclusive;
  PoolPublisher pub(Options(&mode));
  RecordingSink ib;
  RecordingSink rest;
  const std::string ib_name = "ib", rest_name = "rest", ib_res = "rdma/ib", rest_res = "rdma/rest";
  std::vector<PoolPublisher::Target> targets = {{ib_name, ib_res, cfg.pools[0], ib},
                                                {rest_name, rest_res, cfg.pools[1], rest}};
  pub.RecheckNetnsMode(cfg, /*pools_changed=*/true);
  pub.Publish(cfg, Devices(), targets);

  ASSERT_NE(ib.state(), nullptr);
  EXPECT_EQ(ib.state()->ids, std::vector<std::string>{"0000:3b:00.0"});
  EXPECT_TRUE(ib.state()->devices.at("mlx5_0").health.healthy);
  EXPECT_EQ(rest.state()->ids, (std::vector<std::string>{"mlx5_1-0", "mlx5_1-1"})) << "first match wins";
  std::ifstream in(CdiSpecPath(root_, "rdma/ib"));
  ASSERT_TRUE(in.good());
  EXPECT_EQ(nlohmann::json::parse(in)["devices"][0]["name"], "mlx5_0");
  std::string text = metrics_->Scrape();
  EXPECT_NE(text.find("rdmak8s_pool_devices{health=\"Healthy\",resource=\"rdma/ib\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdmak8s_pool_ids{health=\"Healthy\",resource=\"rdma/rest\"} 2\n"), std::string::npos) << text;

  mode = RdmaNetnsMode::kShared;
  pub.Publish(cfg, Devices(), targets);
  EXPECT_TRUE(ib.state()->devices.at("mlx5_0").health.healthy) << "not asked again yet";
  pub.RecheckNetnsMode(cfg, /*pools_changed=*/false);
  EXPECT_EQ(pub.exclusive_blocker(), kBlocked);
  pub.Publish(cfg, Devices(), targets);
  EXPECT_EQ(ib.state()->devices.at("mlx5_0").health, (node::DeviceHealth{false, kBlocked}));
  EXPECT_TRUE(rest.state()->devices.at("mlx5_1").health.healthy);
  mode = RdmaNetnsMode::kExclusive;
  pub.RecheckNetnsMode(cfg, /*pools_changed=*/false);
  pub.Publish(cfg, Devices(), targets);
  EXPECT_TRUE(ib.state()->devices.at("mlx5_0").health.healthy);
}

TEST_F(PoolPublisherTest, WithdrawRemovesTheCdiSpecOnlyWhenAskedAndForgetsThePoolsMetrics) {
  PluginConfig cfg = Config(R"({"pools": [{"name": "a", "selectors": {"transports": ["ib"]}},
                                          {"name": "b", "selectors": {}}]})");
  RdmaNetnsMode mode = RdmaNetnsMode::kExclusive;
  PoolPublisher pub(Options(&mode));
  RecordingSink a;
  RecordingSink b;
  const std::string an = "a", bn = "b", ar = "rdma/a", br = "rdma/b";
  pub.Publish(cfg, Devices(), {{an, ar, cfg.pools[0], a}, {bn, br, cfg.pools[1], b}});
  ASSERT_TRUE(fs::exists(CdiSpecPath(root_, "rdma/a")));
  ASSERT_TRUE(fs::exists(CdiSpecPath(root_, "rdma/b")));

  pub.Withdraw("a", "rdma/a", /*remove_cdi=*/true);   // a reload removed the pool
  pub.Withdraw("b", "rdma/b", /*remove_cdi=*/false);  // shutting down: running containers keep it
  EXPECT_FALSE(fs::exists(CdiSpecPath(root_, "rdma/a")));
  EXPECT_TRUE(fs::exists(CdiSpecPath(root_, "rdma/b")));
  EXPECT_EQ(metrics_->Scrape().find("resource=\"rdma/a\""), std::string::npos) << metrics_->Scrape();
}

// kubelet's streams hear of a pool only when what they show changed: an ID, its health or its
// NUMA node. A publish that changes nothing kubelet sees (the same devices again) hands the
// state over without a notification.
TEST_F(PoolPublisherTest, StreamsAreNotifiedOnlyWhenWhatKubeletSeesChanged) {
  PluginConfig cfg = Config(R"({"pools": [{"name": "p", "capacity": 2, "selectors": {}}]})");
  RdmaNetnsMode mode = RdmaNetnsMode::kExclusive;
  PoolPublisher pub(Options(&mode));
  RecordingSink sink;
  const std::string name = "p", res = "rdma/p";
  auto devices = Devices();
  pub.Publish(cfg, devices, {{name, res, cfg.pools[0], sink}});
  pub.Publish(cfg, devices, {{name, res, cfg.pools[0], sink}});
  devices.begin()->second.health = node::DeviceHealth{false, "port 1 DOWN"};
  pub.Publish(cfg, devices, {{name, res, cfg.pools[0], sink}});
  pub.Publish(cfg, devices, {{name, res, cfg.pools[0], sink}});
  EXPECT_EQ(sink.notified(), (std::vector<bool>{true, false, true, false}));
  ASSERT_NE(sink.state(), nullptr);
  EXPECT_FALSE(sink.state()->devices.begin()->second.health.healthy);
}

}  // namespace
}  // namespace rdmak8s::dp
