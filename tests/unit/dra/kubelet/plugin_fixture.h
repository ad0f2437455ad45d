// The DRA plugin's fixture, shared by plugin_test.cc and metrics_test.cc: the real DraPlugin and
// Preparer on a temporary directory (state, CDI, pod records, the registry), a catalog of one
// InfiniBand device (mlx5_0, published as "mlx5-0"), one allocated claim (team/nic, uid-1) in the
// fake claim reader, and the fake kubelet that drives the plugin over unix-socket gRPC.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "dra/device_catalog.h"
#include "dra/kubelet/plugin.h"
#include "dra/metrics.h"
#include "dra/preparer.h"
#include "fakes/fake_claim_reader.h"
#include "fakes/fake_dra_kubelet.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra::plugin_fixture {

inline constexpr char kDriver[] = "rdma.rdmak8s.io";
inline constexpr char kPool[] = "node-a";

// A claim of namespace "team" allocated with `results` and reserved for pod `pod_uid`, as the
// scheduler leaves it.
inline ResourceClaim AllocatedClaim(std::string name, std::string uid,
                                    std::vector<DeviceResult> results,
                                    std::string pod_uid = "pod-1") {
  ResourceClaim c;
  c.namespace_name = "team";
  c.name = std::move(name);
  c.uid = std::move(uid);
  c.allocated = true;
  c.results = std::move(results);
  c.reserved_for = {{"", "pods", "p", std::move(pod_uid)}};
  return c;
}

class PluginFixture : public ::testing::Test {
 protected:
  // Starts the plugin, reporting to `metrics` (null: none). Call from SetUp.
  void StartPlugin(DraMetrics* metrics) {
    ASSERT_FALSE(tmp_.path().empty());
    PreparerOptions p;
    p.driver_name = kDriver;
    p.state_dir = tmp_.path() + "/state";
    p.cdi_dir = tmp_.path() + "/cdi";
    p.pod_devices_dir = tmp_.path() + "/pods";
    std::filesystem::create_directories(p.cdi_dir);
    std::filesystem::create_directories(tmp_.path() + "/reg");
    SetHealth(true);
    auto prep = Preparer::Create(p, &reader_, &catalog_);
    ASSERT_TRUE(prep.ok()) << prep.status().message();
    preparer_ = std::move(prep).value();
    plugin_ = std::make_unique<DraPlugin>(
        DraPluginOptions{kDriver, tmp_.path() + "/plugin", tmp_.path() + "/reg", {}},
        preparer_.get(), &catalog_, metrics);
    ASSERT_TRUE(plugin_->Start().ok());

    reader_.Put(AllocatedClaim("nic", "uid-1", {{"nic", kDriver, kPool, "mlx5-0"}}));
  }

  void SetHealth(bool healthy) {
    catalog_.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0),
                                 {healthy, healthy ? "" : "port 1 state DOWN"},
                                 node::Presence::kPresent}}});
  }

  testing::TempDir tmp_;
  fake::FakeClaimReader reader_;
  DeviceCatalog catalog_{kPool};
  std::unique_ptr<Preparer> preparer_;
  std::unique_ptr<DraPlugin> plugin_;
  fake::FakeDraKubelet kubelet_;
};

}  // namespace rdmak8s::dra::plugin_fixture
