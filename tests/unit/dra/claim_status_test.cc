// Tests of one device's claim status entry (dra/claim_status.h): device facts in, entry JSON out.
#include "dra/claim_status.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/attachment_facts_sample.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

constexpr char kT0[] = "2026-12-05T02:00:00Z";
constexpr char kT1[] = "2026-12-05T02:05:00Z";

CatalogDevice Found(RdmaDevice dev) {
  CatalogDevice d;
  d.pool = "node-a";
  d.device = "mlx5-2";
  d.dev = std::move(dev);
  return d;
}

RdmaDevice RoceDev() {
  RdmaDevice d = dp::testdev::Roce("mlx5_2", 2, "ens1f0");
  d.node_guid = "0c42:a103:0012:3456";
  d.parent.pci->pcie_root = "pci0000:5d";
  return d;
}

AttachmentFacts Attached() {
  AttachmentFacts f = testing::SampleAttachmentFacts("uid-1", "c1", "mlx5-2");
  f.hardware_address = "02:00:0a:00:00:05";
  return f;
}

DeviceStatusInput Input(std::optional<CatalogDevice> found, std::vector<AttachmentFacts> attached = {}) {
  return {"rdma.rdmak8s.io", {"nic", "node-a", "mlx5-2", ""}, std::move(found), std::move(attached)};
}

// type -> "status reason"
std::map<std::string, std::string> Conditions(const json& entry) {
  std::map<std::string, std::string> out;
  for (const auto& c : entry["conditions"]) {
    out[c["type"]] = c["status"].get<std::string>() + " " + c["reason"].get<std::string>();
  }
  return out;
}

TEST(ClaimStatus, APreparedRoceDeviceSaysItsFactsAndWaitsForTheCni) {
  json e = BuildDeviceStatus(Input(Found(RoceDev())), nullptr, kT0);
  EXPECT_EQ(e["driver"], "rdma.rdmak8s.io");
  EXPECT_EQ(e["pool"], "node-a");
  EXPECT_EQ(e["device"], "mlx5-2");
  EXPECT_FALSE(e.contains("shareID"));
  EXPECT_FALSE(e.contains("networkData"));
  EXPECT_EQ(e["data"], (json{{"rdmaDev", "mlx5_2"}, {"transport", "roce"}, {"port", 1}, {"portState", "ACTIVE"},
                             {"physState", "LinkUp"}, {"netdev", "ens1f0"}, {"uverbs", "/dev/infiniband/uverbs2"},
                             {"nodeGuid", "0c42:a103:0012:3456"}, {"numaNode", 1}, {"pcieRoot", "pci0000:5d"}}))
      << e["data"].dump();
  EXPECT_EQ(Conditions(e), (std::map<std::string, std::string>{{"Ready", "True Ready"},
                                                               {"PortActive", "True PortActive"},
                                                               {"GidPresent", "Unknown WaitingForCni"},
                                                               {"QosApplied", "Unknown WaitingForCni"}}));
  for (const auto& c : e["conditions"]) EXPECT_EQ(c["lastTransitionTime"], kT0);
}

TEST(ClaimStatus, AfterTheCniAttachedItTheEntryHasThePodsAddressGidAndInterface) {
  json e = BuildDeviceStatus(Input(Found(RoceDev()), {Attached()}), nullptr, kT0);
  EXPECT_EQ(e["networkData"], (json{{"interfaceName", "net1"}, {"ips", {"10.0.0.5/24"}},
                                    {"hardwareAddress", "02:00:0a:00:00:05"}}));
  EXPECT_EQ(e["data"]["podIPs"], json({"10.0.0.5/24"}));
  EXPECT_EQ(e["data"]["gid"], "0000:0000:0000:0000:0000:ffff:0a00:0005");
  EXPECT_EQ(e["data"]["gidIndex"], 3);
  EXPECT_EQ(Conditions(e)["GidPresent"], "True GidPresent");
  EXPECT_EQ(Conditions(e)["QosApplied"], "True Applied");
  EXPECT_EQ(Conditions(e)["Ready"], "True Ready");
}

TEST(ClaimStatus, AShareNamesItsShareId) {
  DeviceStatusInput in = Input(Found(RoceDev()));
  in.allocated.share_id = "0b5ae5c4-1f60-4e0e-9d55-1c2b6f3b7d01";
  EXPECT_EQ(BuildDeviceStatus(in, nullptr, kT0)["shareID"], "0b5ae5c4-1f60-4e0e-9d55-1c2b6f3b7d01");
}

TEST(ClaimStatus, AnIbPortTheSubnetManagerHasNotBroughtUpIsNotReadyAndSaysWhy) {
  RdmaDevice d = dp::testdev::Ib("mlx5_0", 0);
  d.ports[0].state = PortState::kInit;
  d.ports[0].pkeys = {0xffff, 0x8001};
  json e = BuildDeviceStatus(Input(Found(d)), nullptr, kT0);
  EXPECT_EQ(Conditions(e)["PortActive"], "False PortNotActive");
  EXPECT_EQ(Conditions(e)["Ready"], "False PortNotActive");
  EXPECT_EQ(Conditions(e)["PKeyMember"], "Unknown WaitingForCni");
  EXPECT_FALSE(Conditions(e).count("GidPresent"));
  EXPECT_NE(e["conditions"][0]["message"].get<std::string>().find("subnet manager"), std::string::npos);
  EXPECT_EQ(e["data"]["pkeys"], json({"0xffff", "0x8001"}));
}

TEST(ClaimStatus, APKeyOutsideThePortsTableIsNotMemberAndNotReady) {
  RdmaDevice d = dp::testdev::Ib("mlx5_0", 0);
  d.ports[0].pkeys = {0xffff};
  AttachmentFacts a = Attached();
  a.gid.clear();
  a.gid_index.reset();
  a.pkey = 0x8001;
  EXPECT_EQ(Conditions(BuildDeviceStatus(Input(Found(d), {a}), nullptr, kT0))["PKeyMember"], "False NotMember");
  EXPECT_EQ(Conditions(BuildDeviceStatus(Input(Found(d), {a}), nullptr, kT0))["Ready"], "False NotMember");
  d.ports[0].pkeys = {0xffff, 0x0001};  // limited membership of the same partition
  EXPECT_EQ(Conditions(BuildDeviceStatus(Input(Found(d), {a}), nullptr, kT0))["PKeyMember"], "True Member");
}

TEST(ClaimStatus, ARocePodWithoutAnAddressHasNoGid) {
  AttachmentFacts a = Attached();
  a.gid.clear();
  a.gid_index.reset();
  a.ips.clear();
  EXPECT_EQ(Conditions(BuildDeviceStatus(Input(Found(RoceDev()), {a}), nullptr, kT0))["GidPresent"], "False NoAddress");
}

TEST(ClaimStatus, ADeviceGoneFromTheNodeIsNotReady) {
  json e = BuildDeviceStatus(Input(std::nullopt), nullptr, kT0);
  EXPECT_EQ(Conditions(e)["PortActive"], "False DeviceGone");
  EXPECT_EQ(Conditions(e)["Ready"], "False DeviceGone");
  EXPECT_FALSE(e.contains("data"));
}

TEST(ClaimStatus, AConditionKeepsItsTransitionTimeUntilItsStatusChanges) {
  json before = BuildDeviceStatus(Input(Found(RoceDev())), nullptr, kT0);
  // Built again from the same facts later: the very same entry (no write needed).
  EXPECT_EQ(BuildDeviceStatus(Input(Found(RoceDev())), before, kT1), before);
  json after = BuildDeviceStatus(Input(Found(RoceDev()), {Attached()}), before, kT1);
  for (const auto& c : after["conditions"]) {
    const bool changed = c["type"] == "GidPresent" || c["type"] == "QosApplied";
    EXPECT_EQ(c["lastTransitionTime"], changed ? kT1 : kT0) << c.dump();
  }
}

TEST(ClaimStatus, TheEntryStaysWithinTheApisLimitsWhateverThePortsPkeyTable) {
  RdmaDevice d = dp::testdev::Ib("mlx5_0", 0);
  for (int i = 0; i < 128; ++i) d.ports[0].pkeys.push_back(static_cast<uint16_t>(0x8000 + i));
  json e = BuildDeviceStatus(Input(Found(d), {Attached()}), nullptr, kT0);
  EXPECT_EQ(e["data"]["pkeys"].size(), kMaxStatusPkeys);
  EXPECT_LE(e["data"].dump().size(), 10240u);
  EXPECT_LE(e["conditions"].size(), 8u);
}

TEST(ClaimStatus, Rfc3339IsUtcToTheSecond) { EXPECT_EQ(Rfc3339(1796436000), "2026-12-05T02:00:00Z"); }

TEST(ClaimStatus, EntryOfFindsOurEntryByPoolDeviceAndShareOnly) {
  const json current = json::parse(R"([
    {"driver": "rdma.rdmak8s.io", "pool": "node-a", "device": "mlx5-0", "data": {"n": 1}},
    {"driver": "rdma.rdmak8s.io", "pool": "node-a", "device": "mlx5-0", "shareID": "s1", "data": {"n": 2}},
    {"driver": "rdma.rdmak8s.io", "pool": "node-b", "device": "mlx5-1", "data": {"n": 3}}])");
  EXPECT_EQ(EntryOf(current, {"nic", "node-a", "mlx5-0", ""})["data"]["n"], 1);
  EXPECT_EQ(EntryOf(current, {"nic", "node-a", "mlx5-0", "s1"})["data"]["n"], 2);
  EXPECT_EQ(EntryOf(current, {"nic", "node-b", "mlx5-1", ""})["data"]["n"], 3);
  EXPECT_TRUE(EntryOf(current, {"nic", "node-a", "mlx5-1", ""}).is_null());
  EXPECT_TRUE(EntryOf(json::object(), {"nic", "node-a", "mlx5-0", ""}).is_null());
}

TEST(ClaimStatus, EntryIndexOfIsWhereEntryOfFindsItsEntry) {
  const json current = json::parse(R"([
    {"pool": "node-a", "device": "mlx5-0", "shareID": "s1"},
    "not an entry",
    {"pool": "node-a", "device": "mlx5-0"}])");
  EXPECT_EQ(EntryIndexOf(current, {"nic", "node-a", "mlx5-0", ""}), std::optional<size_t>(2));
  EXPECT_EQ(EntryIndexOf(current, {"nic", "node-a", "mlx5-0", "s1"}), std::optional<size_t>(0));
  EXPECT_EQ(EntryIndexOf(current, {"nic", "node-a", "mlx5-9", ""}), std::nullopt);
  EXPECT_EQ(EntryIndexOf(json::object(), {"nic", "node-a", "mlx5-0", ""}), std::nullopt);
}

}  // namespace
}  // namespace rdmak8s::dra
