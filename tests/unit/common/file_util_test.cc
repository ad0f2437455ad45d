#include "rdmak8s/file_util.h"

#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

TEST(WriteFileAtomicTest, ReplacesContentWithTheGivenModeAndLeavesNoTemporary) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/state.json";
  ASSERT_TRUE(WriteFileAtomic(path, "old", 0600).ok());
  ASSERT_TRUE(WriteFileAtomic(path, "new content", 0600).ok());
  EXPECT_EQ(Read(path), "new content");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"state.json"});
}

TEST(WriteFileAtomicTest, FailedRenameKeepsTheTargetAndRemovesTheTemporary) {
  testing::TempDir dir;
  // A non-empty directory in the way: rename(2) of a file over it fails with EISDIR.
  const std::string path = dir.path() + "/busy";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  std::ofstream(path + "/keep") << "x";
  Status s = WriteFileAtomic(path, "data");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rename "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_EQ(Entries(dir.path()), std::vector<std::string>{"busy"});
  EXPECT_EQ(Read(path + "/keep"), "x");
}

TEST(WriteFileAtomicTest, MissingDirectoryIsNotFoundNamingTheFile) {
  testing::TempDir dir;
  Status s = WriteFileAtomic(dir.path() + "/no/such/file", "x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(dir.path() + "/no/such/file"), std::string::npos) << s.message();
}

TEST(PathTest, BasenameAndDirnameSplitAtTheLastSlash) {
  EXPECT_EQ(Basename("../../devices/pci0000:5d/0000:5e:00.2"), "0000:5e:00.2");
  EXPECT_EQ(Basename("mlx5_0"), "mlx5_0");
  EXPECT_EQ(Dirname("class/infiniband/mlx5_0"), "class/infiniband");
  EXPECT_EQ(Dirname("mlx5_0"), "");
}

}  // namespace
}  // namespace rdmak8s
