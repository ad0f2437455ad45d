// CheckNode: a node for the node check's tests. A committed fixture sysfs tree
// (tests/fixtures/sysfs/<case>) copied into a temporary directory (relative symlinks kept), so
// a test can add what the case lacks the way the kernel shows it (ECN knobs, hugepages); a /dev
// with the char devices discovery finds, made with mknod; a /proc with a container runtime; and
// in-memory fakes of DCB, RDMA and route netlink.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "check.h"
#include "fakes/fake_dcb_netlink.h"
#include "fakes/fake_rdma_netlink.h"
#include "fakes/fake_route_netlink.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::inspect::testing {

namespace fs = std::filesystem;

class CheckNode {
 public:
  explicit CheckNode(const std::string& fixture) {
    fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + fixture, sys(),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    fs::create_directories(dev() + "/infiniband");
    fs::create_directories(proc());
    discovery_ = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys(), nullptr});
    env_.sysfs_root = sys();
    env_.dev_root = dev();
    env_.proc_root = proc();
    env_.discovery = discovery_.get();
    env_.pfc = &dcb;
    env_.app = &dcb;
    env_.trust = &dcb;
    env_.rdma = &rdma;
    env_.links = &route;
    env_.addresses = &route;
    world->mode = RdmaNetnsMode::kShared;
    // The /dev nodes udev would have made for what sysfs shows.
    auto found = discovery_->DiscoverAll();
    if (found.ok()) {
      for (const RdmaDevice& d : found->devices) {
        for (const CharDevice& c : d.char_devices) MakeCharDevice(c.name, c.major, c.minor);
      }
    }
    SetMountNamespace(1, kHostMountNamespace);
    AddRuntime(100, "containerd", "unlimited");
  }

  std::string sys() const { return tmp_.path() + "/sys"; }
  std::string dev() const { return tmp_.path() + "/dev"; }
  std::string proc() const { return tmp_.path() + "/proc"; }

  void WriteFile(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }
  void MakeCharDevice(const std::string& name, uint32_t maj, uint32_t min) {
    const std::string p = dev() + "/infiniband/" + name;
    ::unlink(p.c_str());
    ASSERT_EQ(::mknod(p.c_str(), S_IFCHR | 0600, makedev(maj, min)), 0) << p;
  }
  // A process whose /proc/<pid>/limits has this soft/hard memlock: named `comm`, running `exe`
  // (default /usr/bin/<comm>, the <pid>/exe link's target), with real, effective, saved and
  // filesystem uid `uid` in <pid>/status.
  void AddRuntime(int pid, const std::string& comm, const std::string& memlock, int uid = 0,
                  const std::string& exe = "") {
    const std::string base = proc() + "/" + std::to_string(pid);
    WriteFile(base + "/comm", comm + "\n");
    WriteFile(base + "/limits",
              "Limit                     Soft Limit           Hard Limit           Units     \n"
              "Max open files            1048576              1048576              files     \n"
              "Max locked memory         " + memlock + "            " + memlock +
                  "            bytes     \n");
    const std::string u = std::to_string(uid);
    WriteFile(base + "/status", "Name:\t" + comm + "\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t" + u +
                                    "\t" + u + "\t" + u + "\t" + u + "\nGid:\t0\t0\t0\t0\n");
    fs::remove(base + "/exe");
    fs::create_symlink(exe.empty() ? "/usr/bin/" + comm : exe, base + "/exe");
    SetMountNamespace(pid, kHostMountNamespace);
  }
  // The host's init (pid 1) has this mount namespace; a runtime added shares it until told.
  static constexpr const char* kHostMountNamespace = "mnt:[4026531841]";
  // <pid>/ns/mnt, as the kernel's link shows it.
  void SetMountNamespace(int pid, const std::string& ns) {
    const std::string dir = proc() + "/" + std::to_string(pid) + "/ns";
    fs::create_directories(dir);
    fs::remove(dir + "/mnt");
    fs::create_symlink(ns, dir + "/mnt");
  }
  // mlx5's ECN knobs of `netdev` (class/net/<netdev>/ecn/roce_{rp,np}/enable/<0..7>), each "0".
  void AddEcnKnobs(const std::string& netdev) {
    for (const char* side : {"roce_rp", "roce_np"}) {
      for (int p = 0; p < 8; ++p) {
        WriteFile(sys() + "/class/net/" + netdev + "/ecn/" + side + "/enable/" + std::to_string(p),
                  "0\n");
      }
    }
  }
  void SetEcn(const std::string& netdev, int prio) {
    for (const char* side : {"roce_rp", "roce_np"}) {
      WriteFile(sys() + "/class/net/" + netdev + "/ecn/" + side + "/enable/" + std::to_string(prio),
                "1\n");
    }
  }

  CheckEnv& env() { return env_; }
  CheckReport Run(const CheckPolicy& policy) { return RunChecks(policy, env_); }

  FakeDcbNetlink dcb;
  std::shared_ptr<FakeRdmaNetlink::World> world = std::make_shared<FakeRdmaNetlink::World>();
  FakeRdmaNetlink rdma{world};
  FakeRouteNetlink route;

 private:
  rdmak8s::testing::TempDir tmp_;
  std::unique_ptr<SysfsDiscovery> discovery_;
  CheckEnv env_;
};

// The one item of `report` with this subject and check (a copy: reports are often temporaries);
// fails the test when there is not exactly one (and then returns an item with an empty subject).
inline CheckItem Find(const CheckReport& report, const std::string& subject,
                                     const std::string& check) {
  CheckItem found;
  int n = 0;
  for (const CheckItem& i : report.items()) {
    if (i.subject == subject && i.check == check) {
      found = i;
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << "items named " << subject << " / " << check << "\n" << FormatReport(report);
  return found;
}

inline CheckPolicy PolicyWithQos(const std::string& qos_json) {
  CheckPolicy p;
  auto nc = ParseQosArg(qos_json);
  EXPECT_TRUE(nc.ok()) << nc.status().ToString();
  if (nc.ok()) p.netconfs.push_back(*nc);
  return p;
}

// The subject of the RoCE checks on mlx5_roce_sriov's PF.
inline constexpr const char* kPf = "mlx5_0 on ens1f0np0";
// ToS 106 = DSCP 26 (AF31), mapped to priority 3, the lossless one.
inline constexpr const char* kQos =
    R"({"trust":"dscp","roceTos":106,"dscpToPriority":{"26":3},"pfc":[3],"ecn":[3]})";

// The RoCE checks' tests (check_roce_test.cc, check_dcb_test.cc): the ConnectX-6 Dx fixture
// (mlx5_roce_sriov) set up the way kQos asks, every netdev of the fixture up with the addresses
// its GIDs show.
class RoceCheckTest : public ::testing::Test {
 protected:
  RoceCheckTest() : node("mlx5_roce_sriov") {
    auto& pf = node.dcb.AddNetdev("ens1f0np0");
    pf.trust = DcbTrust::kDscp;
    pf.app = {{kDcbAppSelDscp, 26, 3}};
    pf.pfc.enabled = 1 << 3;
    node.AddEcnKnobs("ens1f0np0");
    node.SetEcn("ens1f0np0", 3);
    for (const char* n : {"ens1f0np0", "ens1f0np0.100", "mv0", "ens1f0v0", "ens1f0v1", "enp94s0f0s2"}) {
      node.route.AddLink(n, 9000);
    }
    node.route.AddAddress("ens1f0np0", "192.168.10.1");
    node.route.AddAddress("ens1f0np0.100", "192.168.100.1");
    node.route.AddAddress("mv0", "192.168.10.50");
    node.route.AddAddress("ens1f0v0", "10.0.0.2");
  }
  CheckNode node;
};

}  // namespace rdmak8s::inspect::testing
