// docs/trust.md's table, executed: each row's key is set (to its example) in its place and must be
// accepted or refused as the row says; every key the strict parsers accept must have a row, so
// the table cannot go stale (issue 24 item 1).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cni/netconf.h"
#include "cni/node_config.h"
#include "device-plugin/config/config.h"
#include "dra/preparer.h"
#include "fakes/fake_claim_reader.h"
#include "rdmak8s/records/attachment_facts.h"
#include "support/attachment_facts_sample.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"
#include "unit/device-plugin/test_devices.h"

namespace rdmak8s::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kDriver[] = "rdma.rdmak8s.io";
constexpr char kClaim[] = "ResourceClaim";
constexpr char kClass[] = "DeviceClass";
constexpr char kPool[] = "pool configuration";
constexpr char kNode[] = "node configuration";
constexpr char kNad[] = "NetworkAttachmentDefinition";
constexpr char kKubelet[] = "kubelet pod-resources";
constexpr char kCheck[] = "node check";  // rdmak8s-inspect check's policy flags (the admin's)
constexpr char kAgent[] = "agent flags";  // the DaemonSets' flags of both agents (the admin's)
constexpr char kFacts[] = "attachment facts";  // the CNI's files for the DRA driver's claim status
constexpr char kCni[] = "CNI";                   // their only writer (root on the node)
constexpr char kUser[] = "namespace user";
constexpr char kAdmin[] = "admin";
constexpr char kAdminOnly[] = "admin only";

struct Row {
  std::string place, key, owner, example;
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '`')) s.erase(0, 1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '`')) s.pop_back();
  return s;
}

std::vector<Row> ReadTable() {
  std::ifstream in(std::string(RDMAK8S_SOURCE_DIR) + "/docs/trust.md");
  std::vector<Row> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("<!-- trust-table:begin -->") != std::string::npos) inside = true;
    if (line.find("<!-- trust-table:end -->") != std::string::npos) inside = false;
    if (!inside || line.rfind("| ", 0) != 0 || line.rfind("| set in", 0) == 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(Trim(cell));
    if (cells.size() < 4) continue;
    rows.push_back({cells[0], cells[1], cells[2], cells[3]});
  }
  return rows;
}

// "... (allowed: a, b, c)" or "... key (a, b, c)": the list a strict parser names.
std::set<std::string> Listed(const std::string& message, const std::string& opener) {
  std::set<std::string> out;
  const size_t start = message.find(opener);
  if (start == std::string::npos) return out;
  const size_t end = message.find(')', start);
  std::stringstream ss(message.substr(start + opener.size(), end - start - opener.size()));
  for (std::string k; std::getline(ss, k, ',');) out.insert(Trim(k));
  return out;
}

// `obj` with the dotted `path` set to `value` ("qos.trust"; "cni.dev/..." is one key).
void SetPath(json& obj, const std::string& path, const json& value) {
  if (path.rfind("cni.dev/", 0) == 0) {
    obj[path] = value;
    return;
  }
  const size_t dot = path.find('.');
  if (dot == std::string::npos) {
    obj[path] = value;
    return;
  }
  json& child = obj[path.substr(0, dot)];
  if (!child.is_object()) child = json::object();
  SetPath(child, path.substr(dot + 1), value);
}

class TrustTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rows_ = ReadTable();
    ASSERT_FALSE(rows_.empty()) << "no rows between the trust-table markers of docs/trust.md";
    options_.driver_name = kDriver;
    options_.state_dir = tmp_.path() + "/state";
    options_.cdi_dir = tmp_.path() + "/cdi";
    options_.pod_devices_dir = tmp_.path() + "/pods";
    fs::create_directories(options_.cdi_dir);
    catalog_.Update({{"mlx5_0", {dp::testdev::Ib("mlx5_0", 0), {}, node::Presence::kPresent}}});
    auto p = Preparer::Create(options_, &reader_, &catalog_);
    ASSERT_TRUE(p.ok()) << p.status().message();
    preparer_ = std::move(p).value();
  }
  std::set<std::string> Keys(const std::string& place) const {
    std::set<std::string> out;
    for (const auto& r : rows_) {
      if (r.place == place) out.insert(r.key);
    }
    return out;
  }

  std::vector<Row> rows_;
  testing::TempDir tmp_;
  PreparerOptions options_;
  fake::FakeClaimReader reader_;
  DeviceCatalog catalog_{"node-a"};
  std::unique_ptr<Preparer> preparer_;
};

TEST_F(TrustTableTest, EveryRowNamesAKnownPlaceAndOwner) {
  const std::set<std::string> places = {kClaim, kClass, kPool, kNode, kNad, kCheck, kAgent, kKubelet, kFacts};
  for (const auto& r : rows_) {
    EXPECT_TRUE(places.count(r.place)) << "row " << r.key << ": unknown place \"" << r.place << "\"";
    const bool user_place = r.place == kClaim || r.place == kNad;
    if (user_place) {
      EXPECT_TRUE(r.owner == kUser || r.owner == kAdminOnly) << r.place << " " << r.key << ": " << r.owner;
    } else if (r.place == kFacts) {
      EXPECT_EQ(r.owner, kCni) << r.place << " " << r.key;  // no setting: what the CNI learned
    } else if (r.place == kKubelet) {
      EXPECT_EQ(r.owner, "kubelet") << r.place << " " << r.key;  // no setting: a peer's answer
    } else {
      EXPECT_EQ(r.owner, kAdmin) << r.place << " " << r.key;
    }
    EXPECT_FALSE(json::parse(r.example, nullptr, false).is_discarded()) << r.key << ": example is not JSON";
  }
}

TEST_F(TrustTableTest, EachOpaqueOptionIsAcceptedOrRefusedAsItsRowSays) {
  int n = 0;
  for (const auto& r : rows_) {
    if (r.place != kClaim && r.place != kClass) continue;
    SCOPED_TRACE(r.place + " " + r.key);
    const std::string uid = "uid-" + std::to_string(n++);
    ResourceClaim c;
    c.namespace_name = "team";
    c.name = "claim-" + uid;
    c.uid = uid;
    c.allocated = true;
    c.results = {{"nic", kDriver, "node-a", "mlx5-0"}};
    c.reserved_for = {{"", "pods", "p", "pod-" + uid}};
    c.config = {{r.place == kClaim ? kFromClaim : kFromClass, {}, kDriver,
                 json{{r.key, json::parse(r.example)}}.dump()}};
    reader_.Put(c);
    auto prepared = preparer_->Prepare({"team", uid, c.name});
    if (r.owner == kAdminOnly) {
      EXPECT_EQ(prepared.status().code(), StatusCode::kPermissionDenied) << prepared.status().ToString();
      EXPECT_NE(prepared.status().message().find("key \"" + r.key + "\""), std::string::npos)
          << prepared.status().message();
      EXPECT_FALSE(fs::exists(options_.cdi_dir + "/rdma.rdmak8s.io-claim_" + uid + ".json"));
      EXPECT_FALSE(fs::exists(options_.pod_devices_dir + "/pod-" + uid));
      EXPECT_EQ(preparer_->Claims().count(uid), 0u);
    } else {
      EXPECT_TRUE(prepared.ok()) << prepared.status().ToString();
    }
  }
  EXPECT_GT(n, 0);
}

TEST_F(TrustTableTest, EachAttachmentFactsKeyIsReadAndEveryKeyTheReaderTakesHasItsRow) {
  AttachmentFacts good = testing::SampleAttachmentFacts();
  good.pkey = 0x8001;
  const json base = json::parse(AttachmentFactsToJson(good));
  std::set<std::string> rows;
  for (const auto& r : rows_) {
    if (r.place != kFacts) continue;
    SCOPED_TRACE(r.key);
    rows.insert(r.key);
    json doc = base;
    doc[r.key] = json::parse(r.example);
    if (r.key == "claimUid" || r.key == "driver" || r.key == "device") continue;  // name the file too
    auto read = AttachmentFactsFromJson(doc.dump());
    EXPECT_TRUE(read.ok()) << doc.dump() << ": " << read.status().ToString();
  }
  std::set<std::string> keys;
  for (auto it = base.begin(); it != base.end(); ++it) keys.insert(it.key());
  EXPECT_EQ(rows, keys);
  json unknown = base;
  unknown["podDevicesDir"] = "/tmp";
  EXPECT_FALSE(AttachmentFactsFromJson(unknown.dump()).ok());
}

TEST_F(TrustTableTest, EachPoolKeyIsAcceptedInThePoolConfiguration) {
  for (const auto& r : rows_) {
    if (r.place != kPool) continue;
    SCOPED_TRACE(r.key);
    json config = {{"pools", json::array({{{"name", "p"}, {"selectors", json::object()}}})}};
    const json value = json::parse(r.example);
    if (r.key == "pools") {
      config["pools"] = value;
    } else if (r.key.rfind("pools[].", 0) == 0) {
      SetPath(config["pools"][0], r.key.substr(8), value);
    } else {
      SetPath(config, r.key, value);
    }
    auto parsed = dp::ParseConfig(config.dump());
    EXPECT_TRUE(parsed.ok()) << config.dump() << ": " << parsed.status().ToString();
  }
}

TEST_F(TrustTableTest, EachNodeKeyIsAcceptedInTheNodeConfiguration) {
  for (const auto& r : rows_) {
    if (r.place != kNode) continue;
    SCOPED_TRACE(r.key);
    const std::string path = tmp_.path() + "/node.json";
    std::ofstream(path, std::ios::trunc) << json{{r.key, json::parse(r.example)}}.dump();
    ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
    auto loaded = cni::LoadNodeConfig(path);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  }
}

TEST_F(TrustTableTest, EachNadKeyIsAcceptedOrNeedsTheNodesOverrideAsItsRowSays) {
  for (const auto& r : rows_) {
    if (r.place != kNad) continue;
    SCOPED_TRACE(r.key);
    json conf = {{"cniVersion", "1.0.0"}, {"name", "rdma-net"}, {"type", "rdmak8s"}};
    SetPath(conf, r.key, json::parse(r.example));
    cni::CniError err;
    auto parsed = cni::ParseNetConf(conf.dump(), cni::Command::kAdd, &err);
    ASSERT_TRUE(parsed.has_value()) << conf.dump() << ": " << err.msg;
    cni::NodeConfig node;
    auto paths = cni::PathsForInvocation(node, *parsed, cni::Command::kAdd, "node.json");
    if (r.owner == kAdminOnly) {
      ASSERT_FALSE(paths.ok());
      EXPECT_NE(paths.status().message().find(r.key), std::string::npos) << paths.status().message();
      node.allow_netconf_overrides = true;
      EXPECT_TRUE(cni::PathsForInvocation(node, *parsed, cni::Command::kAdd, "node.json").ok());
    } else {
      EXPECT_TRUE(paths.ok()) << paths.status().ToString();
    }
  }
}

// The strict parsers name what they accept when they refuse a key: each of those keys has a row.
TEST_F(TrustTableTest, EveryKeyTheStrictParsersAcceptHasARow) {
  const std::set<std::string> allocate =
      Listed(node::ParseAllocateOptions(R"({"not-a-key": 1})").status().message(), "(allowed: ");
  ASSERT_FALSE(allocate.empty());
  // A pool's "allocate" takes the claim options but the DRA-only ones (gidIndexEnv).
  const std::set<std::string> pool_allocate = Listed(
      dp::ParseConfig(R"({"pools": [{"name": "p", "selectors": {}, "allocate": {"not-a-key": 1}}]})")
          .status()
          .message(),
      "(allowed: ");
  ASSERT_FALSE(pool_allocate.empty());
  const std::set<std::string> top = Listed(dp::ParseConfig(R"({"not-a-key": 1})").status().message(), "(allowed: ");
  const std::set<std::string> pool =
      Listed(dp::ParseConfig(R"({"pools": [{"not-a-key": 1}]})").status().message(), "(allowed: ");
  const std::set<std::string> selectors = Listed(
      dp::ParseConfig(R"({"pools": [{"name": "p", "selectors": {"not-a-key": 1}}]})").status().message(),
      "(allowed: ");
  ASSERT_FALSE(top.empty());
  ASSERT_FALSE(pool.empty());
  ASSERT_FALSE(selectors.empty());

  const std::string node_path = tmp_.path() + "/node.json";
  std::ofstream(node_path) << R"({"not-a-key": 1})";
  ASSERT_EQ(::chmod(node_path.c_str(), 0600), 0);
  const std::set<std::string> node = Listed(cni::LoadNodeConfig(node_path).status().message(), "(allowed: ");
  ASSERT_FALSE(node.empty());

  const std::set<std::string> claim_rows = Keys(kClaim), class_rows = Keys(kClass), pool_rows = Keys(kPool),
                              node_rows = Keys(kNode);
  for (const auto& k : allocate) {
    EXPECT_TRUE(claim_rows.count(k)) << "no ResourceClaim row for the opaque option " << k;
    EXPECT_TRUE(class_rows.count(k)) << "no DeviceClass row for the opaque option " << k;
  }
  for (const auto& k : pool_allocate) {
    EXPECT_TRUE(allocate.count(k)) << "pools[].allocate." << k << " is no claim option";
    EXPECT_TRUE(pool_rows.count("pools[].allocate." + k)) << "no row for pools[].allocate." << k;
  }
  for (const auto& k : top) EXPECT_TRUE(pool_rows.count(k)) << "no row for " << k;
  for (const auto& k : pool) EXPECT_TRUE(pool_rows.count("pools[]." + k)) << "no row for pools[]." << k;
  for (const auto& k : selectors) {
    EXPECT_TRUE(pool_rows.count("pools[].selectors." + k)) << "no row for pools[].selectors." << k;
  }
  for (const auto& k : node) EXPECT_TRUE(node_rows.count(k)) << "no node configuration row for " << k;
  // And no row for a key nobody accepts.
  for (const auto& k : claim_rows) EXPECT_TRUE(allocate.count(k)) << "ResourceClaim row " << k << " is no option";
  for (const auto& k : class_rows) EXPECT_TRUE(allocate.count(k)) << "DeviceClass row " << k << " is no option";
  for (const auto& k : node_rows) EXPECT_TRUE(node.count(k)) << "node configuration row " << k << " is no key";
  // What a claim may set is what kClaimSettableOptions says, and the table says the same.
  std::set<std::string> user_rows;
  for (const auto& r : rows_) {
    if (r.place == kClaim && r.owner == kUser) user_rows.insert(r.key);
  }
  EXPECT_EQ(user_rows, std::set<std::string>(kClaimSettableOptions.begin(), kClaimSettableOptions.end()));
}

}  // namespace
}  // namespace rdmak8s::dra
