#include "support/sysfs_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::testing {
namespace {

namespace fs = std::filesystem;

std::string RunCommand(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *rc = ::pclose(p);
  return out;
}

// The committed trees must be exactly what generate.cc writes (same files, same contents, same
// relative link targets), so a change to the builder or the generator shows up here.
TEST(SysfsFixturesTest, CommittedTreesMatchGenerator) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  int rc = 0;
  RunCommand(std::string(RDMAK8S_BINARY_DIR) + "/tests/make_sysfs_fixtures " + tmp.path(), &rc);
  ASSERT_EQ(rc, 0);
  std::string diff = RunCommand("diff -r --no-dereference " + tmp.path() + " " +
                             std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs 2>&1 | grep -v '^Only in " +
                             std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs: [a-zA-Z_.]*\\(md\\|cc\\)$'",
                         &rc);
  EXPECT_EQ(diff, "") << "regenerate: make_sysfs_fixtures tests/fixtures/sysfs";
}

TEST(SysfsBuilderTest, LinksAreRelativeAndResolveInsideTheTree) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  SysfsBuilder b(tmp.path());
  PciFunctionSpec pf;
  pf.address = "0000:3b:00.0";
  pf.root_port = "0000:3a:00.0";
  pf.sriov_totalvfs = 4;
  ASSERT_TRUE(b.AddPciFunction(pf).ok());
  PciFunctionSpec vf = pf;
  vf.address = "0000:3b:00.1";
  ASSERT_TRUE(b.AddVf(pf.address, 0, vf).ok());
  RdmaDeviceSpec d;
  d.name = "mlx5_0";
  d.parent_name = pf.address;
  d.ports = {PortSpec{}};
  ASSERT_TRUE(b.AddRdmaDevice(d).ok());
  ASSERT_TRUE(b.status().ok()) << b.status().ToString();

  const fs::path dev = fs::path(tmp.path()) / "class/infiniband/mlx5_0";
  EXPECT_EQ(fs::read_symlink(dev), "../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0");
  EXPECT_EQ(fs::read_symlink(dev / "device"), "../../../0000:3b:00.0");
  EXPECT_EQ(fs::canonical(dev / "device"),
            fs::canonical(fs::path(tmp.path()) / "bus/pci/devices/0000:3b:00.0"));
  const fs::path vf_dir = fs::path(tmp.path()) / "bus/pci/devices/0000:3b:00.1";
  EXPECT_EQ(fs::read_symlink(vf_dir / "physfn"), "../0000:3b:00.0");
  EXPECT_EQ(fs::read_symlink(fs::path(tmp.path()) / "bus/pci/devices/0000:3b:00.0/virtfn0"),
            "../0000:3b:00.1");
  EXPECT_TRUE(fs::exists(dev / "ports/1/gids/15"));
  EXPECT_FALSE(fs::exists(dev / "ports/1/gid_attrs/types/15"));  // empty GID: kernel gives EINVAL
}

TEST(SysfsBuilderTest, RemoveDeviceTakesItsCharDevicesAlong) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  SysfsBuilder b(tmp.path());
  RdmaDeviceSpec d;
  d.name = "rxe0";
  d.parent = RdmaParent::kVirtual;
  d.umad = true;
  d.ports = {PortSpec{}};
  ASSERT_TRUE(b.AddRdmaDevice(d).ok());
  EXPECT_TRUE(fs::exists(fs::path(tmp.path()) / "class/infiniband_mad/umad0/ibdev"));
  ASSERT_TRUE(b.RemoveDevice("rxe0").ok());
  EXPECT_FALSE(fs::exists(fs::path(tmp.path()) / "class/infiniband/rxe0"));
  EXPECT_FALSE(fs::exists(fs::path(tmp.path()) / "class/infiniband_mad/umad0"));
  EXPECT_FALSE(fs::exists(fs::path(tmp.path()) / "class/infiniband_verbs/uverbs0"));
  EXPECT_EQ(b.RemoveDevice("rxe0").code(), StatusCode::kNotFound);
}

// In exclusive mode a device moved to a pod vanishes from the node's sysfs (class/infiniband and
// its directory under the bus device's infiniband/) and shows in the pod's; its bus device and
// uverbs char device stay in the node's view; attributes travel with it.
// A copy of the mlx5_roce_sriov fixture under `tmp`: the node's view of a NetnsSysfs.
fs::path CopyRoceFixture(const TempDir& tmp) {
  const fs::path node = fs::path(tmp.path()) / "node";
  fs::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/mlx5_roce_sriov", node,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  return node;
}

TEST(NetnsSysfsTest, AMovedDeviceShowsOnlyInTheViewOfItsNetns) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path node = CopyRoceFixture(tmp);
  NetnsSysfs world("node", node.string(), tmp.path() + "/views");
  const std::string bus = "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.2";
  ASSERT_TRUE(world.WriteRdmaAttr("mlx5_1", "ports/1/gids/5", "fe80::1").ok());
  { Status s = world.MoveRdmaDevice("mlx5_1", "pod"); ASSERT_TRUE(s.ok()) << s.ToString(); }
  auto pod = world.RootOf("pod");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  const fs::path p(*pod);
  EXPECT_FALSE(fs::exists(node / "class/infiniband/mlx5_1"));
  EXPECT_FALSE(fs::exists(node / bus / "infiniband/mlx5_1"));
  EXPECT_TRUE(fs::is_directory(node / bus)) << "the bus device stays";
  EXPECT_TRUE(fs::exists(node / "class/infiniband_verbs/uverbs1/ibdev")) << "uverbs is not tagged";
  EXPECT_TRUE(fs::exists(node / "class/infiniband/mlx5_0"));
  EXPECT_TRUE(fs::exists(p / "class/infiniband/mlx5_1/ports/1/gids/5"));
  EXPECT_EQ(fs::canonical(p / "class/infiniband/mlx5_1/device"), fs::canonical(p / bus));
  EXPECT_FALSE(fs::exists(p / "class/infiniband/mlx5_0")) << "devices of the node stay hidden";
  EXPECT_FALSE(fs::exists(p / "class/net/ens1f0np0")) << "netdevs of the node stay hidden";
  EXPECT_TRUE(fs::exists(p / "class/net/lo")) << "every netns has its own lo";
  EXPECT_EQ(world.NetnsOf("mlx5_1"), "pod");
  ASSERT_TRUE(world.WriteRdmaAttr("mlx5_1", "ports/1/gids/6", "fe80::2").ok());
  EXPECT_TRUE(fs::exists(p / "class/infiniband/mlx5_1/ports/1/gids/6"));
  ASSERT_TRUE(world.MoveRdmaDevice("mlx5_1", "node").ok());
  EXPECT_FALSE(fs::exists(p / "class/infiniband/mlx5_1"));
  EXPECT_TRUE(fs::exists(node / "class/infiniband/mlx5_1/ports/1/gids/6"));
  EXPECT_EQ(world.MoveRdmaDevice("mlx5_9", "pod").code(), StatusCode::kNotFound);
}

TEST(NetnsSysfsTest, NetdevsMoveAndSharedModeShowsEveryDeviceEverywhere) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path node = CopyRoceFixture(tmp);
  NetnsSysfs world("node", node.string(), tmp.path() + "/views");
  world.SetSharedMode([] { return true; });
  ASSERT_TRUE(world.MoveNetdev("ens1f0v0", "pod").ok());
  auto pod = world.RootOf("pod");
  ASSERT_TRUE(pod.ok());
  const fs::path p(*pod);
  EXPECT_FALSE(fs::exists(node / "class/net/ens1f0v0"));
  EXPECT_EQ(fs::canonical(p / "class/net/ens1f0v0/device").filename(), "0000:5e:00.2");
  EXPECT_TRUE(fs::exists(p / "class/infiniband/mlx5_0/ports/1/gids/0")) << "a compat device";
  ASSERT_TRUE(world.WriteRdmaAttr("mlx5_0", "ports/1/state", "1: DOWN").ok());
  std::ifstream a(node / "class/infiniband/mlx5_0/ports/1/state"), b(p / "class/infiniband/mlx5_0/ports/1/state");
  std::string sa, sb;
  std::getline(a, sa);
  std::getline(b, sb);
  EXPECT_EQ(sa, "1: DOWN");
  EXPECT_EQ(sb, "1: DOWN");
}

// A product polls attributes while a test changes them (a GID wait reads the GID table while
// the test adds the pod's GID). The kernel's sysfs read returns a value whole; so must ours: the
// old truncate-then-write let a reader see an empty GID file, which the CNI rightly calls "not a
// GID" (PluginTest.AnAddWaitingForItsGidDoesNotBlockOtherAttachments failed so in CI).
TEST(NetnsSysfsTest, AnAttributeIsReadWholeWhileATestRewritesIt) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const fs::path node = CopyRoceFixture(tmp);
  NetnsSysfs world("node", node.string(), tmp.path() + "/views");
  const std::string a = "fe80:0000:0000:0000:0000:0000:0000:0001";
  const std::string b = "0000:0000:0000:0000:0000:ffff:0a4d:002d";
  ASSERT_TRUE(world.WriteRdmaAttr("mlx5_1", "ports/1/gids/5", a).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::vector<std::string> torn;
  std::thread reader([&] {
    const fs::path p = node / "class/infiniband/mlx5_1/ports/1/gids/5";
    while (!stop || reads == 0) {
      std::ifstream f(p);
      std::string line;
      std::getline(f, line);
      if (line != a && line != b && torn.size() < 5) torn.push_back("\"" + line + "\"");
      ++reads;
    }
  });
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(world.WriteRdmaAttr("mlx5_1", "ports/1/gids/5", i % 2 ? a : b).ok());
  }
  stop = true;
  reader.join();
  EXPECT_THAT(torn, ::testing::IsEmpty()) << "of " << reads << " reads";
  for (const auto& e : fs::recursive_directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename().string().rfind(".write.", 0), std::string::npos)
        << e.path() << ": a write's temporary name is left";
  }
}

}  // namespace
}  // namespace rdmak8s::testing
