#include "support/sysfs_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/temp_dir.h"

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

}  // namespace
}  // namespace rdmak8s::testing
