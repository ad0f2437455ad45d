// The sysfs readers' contract (rdmak8s/device/sysfs_attr.h and the internal device/sysfs.h):
// trailing whitespace trimmed, missing is kNotFound and a dangling link is not missing, every
// error names the full path, listings hold every entry but "." and "..", and nothing resolved
// in a tree leaves it. On a real directory tree, as the kernel's sysfs is one.
#include "device/sysfs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rdmak8s/device/sysfs_attr.h"
#include "support/temp_dir.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;
using ::rdmak8s::testing::TempDir;

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

class SysfsTest : public ::testing::Test {
 protected:
  std::string root() const { return dir_.path(); }
  TempDir dir_;
};

TEST_F(SysfsTest, ReadTrimsTrailingWhitespaceOnly) {
  Write(root() + "/dev/node_guid", "  0002:c903:0001:0001 \n\n");
  auto dir = SysfsDir::Open(root() + "/dev");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  auto text = dir->Read("node_guid");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "  0002:c903:0001:0001");
  auto same = ReadSysfsAttr(root() + "/dev/node_guid");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, *text);
}

TEST_F(SysfsTest, MissingIsNotFoundAndNamesTheFullPath) {
  fs::create_directories(root() + "/dev");
  auto dir = SysfsDir::Open(root() + "/dev");
  ASSERT_TRUE(dir.ok());
  auto text = dir->Read("ports/1/state");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_NE(text.status().message().find(root() + "/dev/ports/1/state"), std::string::npos)
      << text.status().message();
  auto optional = dir->ReadOptional("ports/1/state");
  ASSERT_TRUE(optional.ok());
  EXPECT_FALSE(optional->has_value());
  auto opened = SysfsDir::Open(root() + "/absent");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kNotFound);
}

TEST_F(SysfsTest, ADanglingLinkIsBrokenNotMissing) {
  fs::create_directories(root() + "/dev");
  fs::create_symlink("../nowhere", root() + "/dev/device");
  auto dir = SysfsDir::Open(root() + "/dev");
  ASSERT_TRUE(dir.ok());
  auto text = dir->Read("device");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInternal);
  EXPECT_NE(text.status().message().find("dangling symlink"), std::string::npos)
      << text.status().message();
  // ReadOptional hides only what is missing.
  auto optional = dir->ReadOptional("device");
  ASSERT_FALSE(optional.ok());
  EXPECT_EQ(optional.status().code(), StatusCode::kInternal);
  auto by_path = ReadSysfsAttr(root() + "/dev/device");
  ASSERT_FALSE(by_path.ok());
  EXPECT_EQ(by_path.status().code(), StatusCode::kInternal);
}

TEST_F(SysfsTest, ReadLinkTellsALinkFromAFile) {
  Write(root() + "/dev/file", "x\n");
  fs::create_symlink("../../devices/pci0000:00/0000:00:02.0", root() + "/dev/device");
  auto dir = SysfsDir::Open(root() + "/dev");
  ASSERT_TRUE(dir.ok());
  auto link = dir->ReadLink("device");
  ASSERT_TRUE(link.ok()) << link.status().message();
  EXPECT_EQ(*link, "../../devices/pci0000:00/0000:00:02.0");
  auto file = dir->ReadLink("file");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
  auto missing = dir->ReadLink("absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto by_path = internal::ReadLinkPath(root() + "/dev/device");
  ASSERT_TRUE(by_path.ok());
  EXPECT_EQ(*by_path, *link);
}

TEST_F(SysfsTest, ListingHoldsEveryEntryOfALargeDirectory) {
  // More names than one getdents64 buffer (16 KiB) holds: the listing reads to the end.
  std::vector<std::string> want;
  for (int i = 0; i < 1500; ++i) {
    want.push_back("gid_attribute_entry_" + std::to_string(i));
    Write(root() + "/gids/" + want.back(), "");
  }
  std::sort(want.begin(), want.end());
  auto sorted = ListSysfsDir(root() + "/gids");
  ASSERT_TRUE(sorted.ok()) << sorted.status().message();
  EXPECT_EQ(*sorted, want);
  auto dir = SysfsDir::Open(root());
  ASSERT_TRUE(dir.ok());
  auto unsorted = dir->List("gids");
  ASSERT_TRUE(unsorted.ok());
  std::sort(unsorted->begin(), unsorted->end());
  EXPECT_EQ(*unsorted, want);
  auto raw = internal::ListPath(root() + "/gids");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->size(), want.size());
}

TEST_F(SysfsTest, ListingAMissingDirectoryIsNotFound) {
  auto listed = ListSysfsDir(root() + "/absent");
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.status().code(), StatusCode::kNotFound);
  EXPECT_NE(listed.status().message().find(root() + "/absent"), std::string::npos);
  auto dir = SysfsDir::Open(root());
  ASSERT_TRUE(dir.ok());
  auto sub = dir->List("absent");
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kNotFound);
}

TEST_F(SysfsTest, SubReadsRelativeToTheOpenedDirectory) {
  Write(root() + "/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  Write(root() + "/class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
  auto dev = SysfsDir::Open(root() + "/class/infiniband/mlx5_0");
  ASSERT_TRUE(dev.ok());
  auto port = dev->Sub("ports/1");
  ASSERT_TRUE(port.ok()) << port.status().message();
  EXPECT_EQ(port->path(), root() + "/class/infiniband/mlx5_0/ports/1");
  auto state = internal::ReadPortLinkStateIn(*port);
  ASSERT_TRUE(state.ok()) << state.status().message();
  EXPECT_EQ(state->state, PortState::kActive);
  EXPECT_EQ(state->phys_state, 5u);
  EXPECT_EQ(state->phys_state_name, "LinkUp");
  // A renamed directory does not change what the open one reads.
  fs::rename(root() + "/class", root() + "/moved");
  auto again = port->Read("state");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, "4: ACTIVE");
}

TEST_F(SysfsTest, NumberedNames) {
  auto active = internal::ParseNumberedName("4: ACTIVE", "state");
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->number, 4u);
  EXPECT_EQ(active->name, "ACTIVE");
  auto polling = internal::ParseNumberedName("2:Polling", "phys_state");
  ASSERT_TRUE(polling.ok());
  EXPECT_EQ(polling->number, 2u);
  EXPECT_EQ(polling->name, "Polling");
  for (const char* bad : {"ACTIVE", "x: ACTIVE", ": ACTIVE", "-1: DOWN"}) {
    auto r = internal::ParseNumberedName(bad, "state");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("state"), std::string::npos) << r.status().message();
  }
}

TEST_F(SysfsTest, ReadBeneathRefusesALinkOutOfTheTree) {
  Write(root() + "/outside/secret", "s\n");
  Write(root() + "/tree/net/eth0/tc", "3\n");
  fs::create_symlink(root() + "/outside/secret", root() + "/tree/net/eth0/prio");
  auto inside = ReadSysfsAttrBeneath(root() + "/tree", "net/eth0/tc");
  ASSERT_TRUE(inside.ok()) << inside.status().message();
  EXPECT_EQ(*inside, "3");
  auto out = ReadSysfsAttrBeneath(root() + "/tree", "net/eth0/prio");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition) << out.status().message();
}

TEST_F(SysfsTest, ResolvingStaysInTheTree) {
  fs::create_directories(root() + "/devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0");
  fs::create_directories(root() + "/class/infiniband");
  fs::create_symlink("../../devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0",
                     root() + "/class/infiniband/mlx5_0");
  EXPECT_EQ(ResolveInSysfsTree(root(), "class/infiniband/mlx5_0"),
            "devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0");
  fs::create_symlink("/etc", root() + "/class/infiniband/absolute");
  EXPECT_EQ(ResolveInSysfsTree(root(), "class/infiniband/absolute"), "");
  fs::create_symlink("../../../..", root() + "/class/infiniband/above");
  EXPECT_EQ(ResolveInSysfsTree(root(), "class/infiniband/above"), "");
  EXPECT_EQ(ResolveInSysfsTree(root(), "class/infiniband/absent"), "");
}

}  // namespace
}  // namespace rdmak8s
