// The plugin driven as a runtime drives it: a chained conflist (macvlan + host-local in front,
// rdmak8s last) executed by cni-driver over Debian's libcni, against real namespaces, with the
// reference plugins from containernetworking-plugins (/usr/lib/cni) and the built binary.
// This machine's kernel has no RDMA: ADD must fail cleanly and leave nothing behind.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cni/state.h"
#include "cni_test_util.h"
#include "support/test_dirs.h"
#include "support/throwaway_netns.h"

namespace rdmak8s::cni {
namespace {

using nlohmann::json;
using rdmak8s::testing::NewThrowawayNetns;
using rdmak8s::testing::ShIn;

struct Result {
  int exit_code = -1;
  std::string out;
};

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/sys/class/infiniband", F_OK) == 0) GTEST_SKIP() << "this host has RDMA";
    auto node = NewThrowawayNetns();
    ASSERT_TRUE(node.ok());
    node_ = std::move(*node);
    auto pod = NewThrowawayNetns();
    ASSERT_TRUE(pod.ok());
    pod_ = std::move(*pod);
    ASSERT_TRUE(ShIn(node_, "ip link add m0 type veth peer name m1 && ip link set m0 up && ip link set m1 up").ok());
    dir_ = tmp_.path();
  }

  void WriteConflist(const std::string& version) {
    json list = {{"cniVersion", version}, {"name", "rdmanet"}, {"plugins", {
        {{"type", "macvlan"}, {"master", "m0"}, {"mode", "bridge"},
         {"ipam", {{"type", "host-local"}, {"subnet", "10.98.0.0/24"}, {"dataDir", dir_ + "/ipam"}}}},
        {{"type", "rdmak8s"}, {"gidTimeoutMs", 200}}}}};
    ASSERT_TRUE(testing::WriteFile(dir_ + "/net.conflist", list.dump(2)));
    // Host paths are the node's, not the conflist's: the node configuration, which the runtime's
    // environment (cni-driver passes its own on) names.
    ASSERT_TRUE(testing::WriteFile(dir_ + "/node.json", json({{"stateDir", dir_ + "/state"},
                                                              {"logFile", dir_ + "/rdmak8s.log"}}).dump()));
  }

  Result Drive(const std::string& args) {
    std::string cmd = "RDMAK8S_CNI_NODE_CONFIG=" + dir_ + "/node.json " + std::string(RDMAK8S_CNI_DRIVER) + " -conflist " + dir_ + "/net.conflist -plugin-dirs " +
                      RDMAK8S_BINARY_DIR + "/cni:/usr/lib/cni -cache-dir " + dir_ + "/cache " + args +
                      " 2>>" + dir_ + "/driver.err";
    Result r;
    // popen forks from this thread, so the runtime runs in the node netns.
    EXPECT_TRUE(RunInNetns(node_, [&]() -> Status {
      FILE* p = popen(cmd.c_str(), "r");
      if (p == nullptr) return InternalError("popen");
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
      int rc = pclose(p);
      r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
      return Status::Ok();
    }).ok());
    return r;
  }

  std::string PodArgs(const std::string& cmd) {
    return "-cmd " + cmd + " -netns " + pod_.path() + " -id c1 -ifname net1";
  }

  Netns node_, pod_;
  testing::TempDir tmp_;
  std::string dir_;
};

TEST_F(DriverTest, ChainedAddFailsCleanlyOnAHostWithoutRdmaAndLeavesNothingBehind) {
  for (std::string version : {"1.0.0", "0.4.0", "0.3.1"}) {
    SCOPED_TRACE(version);
    WriteConflist(version);
    Result r = Drive(PodArgs("ADD"));
    EXPECT_EQ(r.exit_code, 1) << r.out;
    json err = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(err.is_object()) << r.out;
    EXPECT_EQ(err["code"], 100) << r.out;
    EXPECT_NE(err["msg"].get<std::string>().find("no RDMA on this node"), std::string::npos) << r.out;
    EXPECT_FALSE(ShIn(pod_, "ip link show net1").ok()) << "macvlan removed by the runtime's DEL";
    EXPECT_NE(std::system(("ls " + dir_ + "/ipam/rdmanet/10.98.0.* >/dev/null 2>&1").c_str()), 0)
        << "host-local released the address";
    EXPECT_NE(access((dir_ + "/state").c_str(), F_OK), 0) << "rdmak8s created no state";
    EXPECT_NE(testing::ReadFile(dir_ + "/rdmak8s.log").find("no RDMA on this node"), std::string::npos);
  }
}

TEST_F(DriverTest, DelGcAndStatusThroughTheRuntime) {
  // Records of three attachments of this network, nothing moved, no knobs (what an ADD in shared
  // mode leaves): the runtime's DEL and GC must reach the plugin with the right attachment and
  // list, or the records stay. (Debian's macvlan supports up to 1.0.0, which has no GC: libcni
  // sends GC and STATUS of a 1.1.0 list only to the plugins that support 1.1.0.)
  WriteConflist("1.0.0");
  StateStore store(dir_ + "/state");
  for (const std::string cid : {"c1", "c2", "c3"}) {
    AttachmentRecord rec;
    rec.network = "rdmanet";
    rec.container_id = cid;
    rec.ifname = "net1";
    rec.cni_version = "1.1.0";
    rec.rdma_dev = "mlx5_0";
    rec.transport = "roce";
    rec.netns_mode = "shared";
    ASSERT_TRUE(store.Save(rec).ok());
  }
  auto records = [&] {
    std::set<std::string> keys;
    auto l = store.List();
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (l.ok()) for (const auto& r : *l) keys.insert(r.container_id);
    return keys;
  };
  Result r = Drive(PodArgs("DEL"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(records(), (std::set<std::string>{"c2", "c3"})) << "DEL released c1/net1";
  WriteConflist("1.1.0");
  r = Drive("-cmd GC -valid c2/net1,c9/net1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(records(), (std::set<std::string>{"c2"})) << "GC released what is not valid";
  r = Drive("-cmd STATUS");
  EXPECT_EQ(r.exit_code, 1);
  json err = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(err.is_object()) << r.out;
  EXPECT_EQ(err["code"], 50);
}

TEST_F(DriverTest, VersionThroughTheRuntime) {
  Result r = Drive("-cmd VERSION rdmak8s");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(json::parse(r.out)["supportedVersions"], json({"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}));
}

}  // namespace
}  // namespace rdmak8s::cni
