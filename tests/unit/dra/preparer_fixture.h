// The Preparer's test fixture (dra/preparer.h): a preparer over temporary directories, a fake
// claim reader and a catalog of two IB devices (one unhealthy) and one RoCE device.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dra/preparer.h"
#include "fakes/fake_claim_reader.h"
#include "rdmak8s/records/pod_devices.h"
#include "support/temp_dir.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra {

inline constexpr char kDriver[] = "rdma.rdmak8s.io";
inline constexpr char kPool[] = "node-a";

inline ResourceClaim Claim(std::string uid, std::vector<DeviceResult> results,
                           std::vector<std::string> pods = {"pod-1"}) {
  ResourceClaim c;
  c.namespace_name = "team";
  c.name = "nic-claim";
  c.uid = std::move(uid);
  c.allocated = true;
  c.results = std::move(results);
  for (const auto& p : pods) c.reserved_for.push_back({"", "pods", "pod-" + p, p});
  return c;
}

inline DeviceResult Ours(std::string device, std::string request = "nic") {
  return {std::move(request), kDriver, kPool, std::move(device)};
}

inline std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PreparerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    options_.driver_name = kDriver;
    options_.state_dir = tmp_.path() + "/state";
    options_.cdi_dir = tmp_.path() + "/cdi";
    options_.pod_devices_dir = tmp_.path() + "/pods";
    std::filesystem::create_directories(options_.cdi_dir);
    catalog_.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {}, node::Presence::kPresent}},
                     {"mlx5_1", {dp::testdev::Ib("mlx5_1", 1, "0000:3b:00.1"), {false, "port 1 state DOWN"},
                                 node::Presence::kPresent}},
                     {"mlx5_2", {dp::testdev::Roce("mlx5_2", 2, "eth0"), {}, node::Presence::kPresent}}});
    Restart();
  }
  // A new Preparer over the same directories: what a driver restart sees.
  void Restart() {
    auto p = Preparer::Create(options_, &reader_, &catalog_);
    ASSERT_TRUE(p.ok()) << p.status().message();
    preparer_ = std::move(p).value();
  }
  ClaimRef Ref(const std::string& uid) { return {"team", uid, "nic-claim"}; }

  testing::TempDir tmp_;
  PreparerOptions options_;
  fake::FakeClaimReader reader_;
  DeviceCatalog catalog_{kPool};
  std::unique_ptr<Preparer> preparer_;
};

}  // namespace rdmak8s::dra
