#include "rdmak8s/base/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/planted_files.h"
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

TEST(WriteFileAtomicTest, ASymlinkAtTheTemporaryNameIsNeverFollowed) {
  testing::TempDir dir;
  const std::string victim = dir.path() + "/victim";
  std::ofstream(victim) << "precious";
  const std::string path = dir.path() + "/state.json";
  // The temporary's first name is predictable (pid, tid): whoever can write the directory could
  // plant a link there. O_EXCL|O_NOFOLLOW refuse it; the write goes to another name.
  const std::string planted = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(gettid());
  ASSERT_EQ(symlink(victim.c_str(), planted.c_str()), 0);
  Status s = WriteFileAtomic(path, "new", 0600);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Read(victim), "precious");
  EXPECT_EQ(Read(path), "new");
  struct stat st {};
  ASSERT_EQ(lstat(planted.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "not ours: left alone";
}

TEST(WriteFileAtomicTest, TheModeIsExactWhateverTheUmask) {
  testing::TempDir dir;
  mode_t old = umask(0077);
  Status s = WriteFileAtomic(dir.path() + "/spec.json", "{}", 0644);
  umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  struct stat st {};
  ASSERT_EQ(stat((dir.path() + "/spec.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

namespace {
// Mode of `path`'s permission bits, or ~0 when it cannot be stat'ed.
mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : ~mode_t{0};
}
}  // namespace

TEST(MakeDirsTest, EachDirectoryItMakesHasItsModeWhateverTheUmask) {
  testing::TempDir dir;
  for (mode_t mask : {mode_t{0}, mode_t{0077}}) {
    const std::string top = dir.path() + "/m" + std::to_string(mask);
    mode_t old = umask(mask);
    Status s = MakeDirs(top + "/a/b/plugin", 0750);
    umask(old);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(ModeOf(top), 0755u) << "umask " << mask;
    EXPECT_EQ(ModeOf(top + "/a/b"), 0755u) << "umask " << mask;
    EXPECT_EQ(ModeOf(top + "/a/b/plugin"), 0750u) << "umask " << mask;
  }
}

TEST(MakeDirsTest, AnExistingDirectoryIsLeftAsItIsAndAFileInThePathIsNamed) {
  testing::TempDir dir;
  ASSERT_EQ(mkdir((dir.path() + "/kubelet").c_str(), 0711), 0);
  ASSERT_EQ(chmod((dir.path() + "/kubelet").c_str(), 0711), 0);
  ASSERT_TRUE(MakeDirs(dir.path() + "/kubelet", 0750).ok());
  EXPECT_EQ(ModeOf(dir.path() + "/kubelet"), 0711u);

  std::ofstream(dir.path() + "/file") << "x";
  Status s = MakeDirs(dir.path() + "/file/sub", 0750);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find(dir.path() + "/file exists and is not a directory"), std::string::npos)
      << s.ToString();
}

TEST(EnsurePrivateDirTest, UnderUmask000ItAndItsNewParentsGetExactModes) {
  testing::TempDir dir;
  mode_t old = umask(0);
  Status s = EnsurePrivateDir(dir.path() + "/state/dra");
  umask(old);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ModeOf(dir.path() + "/state"), 0755u);
  EXPECT_EQ(ModeOf(dir.path() + "/state/dra"), 0700u);
}

// A tree with links that stay inside it and links that leave it, for OpenBeneath.
class OpenBeneathTest : public ::testing::TestWithParam<BeneathMethod> {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/root";
    outside_ = dir_.path() + "/outside";
    ASSERT_EQ(std::system(("mkdir -p " + root_ + "/devices/pf0/ecn " + outside_).c_str()), 0);
    std::ofstream(root_ + "/devices/pf0/ecn/enable") << "0\n";
    std::ofstream(outside_ + "/victim") << "precious\n";
    // Kernel-shaped: class/net/<netdev> is a relative link into devices/.
    ASSERT_EQ(std::system(("mkdir -p " + root_ + "/class/net").c_str()), 0);
    ASSERT_EQ(symlink("../../devices/pf0", (root_ + "/class/net/pf0").c_str()), 0);
    ASSERT_EQ(symlink("../../../outside", (root_ + "/class/net/evil").c_str()), 0);
    ASSERT_EQ(symlink((outside_ + "/victim").c_str(), (root_ + "/devices/pf0/ecn/abs").c_str()), 0);
    ASSERT_EQ(symlink("../../../../outside/victim", (root_ + "/devices/pf0/ecn/rel").c_str()), 0);
    ASSERT_EQ(symlink(("/proc/self/root" + outside_ + "/victim").c_str(), (root_ + "/devices/pf0/ecn/magic").c_str()), 0);
    ASSERT_EQ(symlink("loop2", (root_ + "/loop1").c_str()), 0);
    ASSERT_EQ(symlink("loop1", (root_ + "/loop2").c_str()), 0);
  }
  StatusOr<int> Open(const std::string& rel, int flags) { return OpenBeneath(root_, rel, flags, GetParam()); }

  testing::TempDir dir_;
  std::string root_, outside_;
};

TEST_P(OpenBeneathTest, FollowsLinksThatStayInsideTheRoot) {
  auto fd = Open("class/net/pf0/ecn/enable", O_WRONLY | O_TRUNC);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  ASSERT_EQ(write(*fd, "1\n", 2), 2);
  close(*fd);
  EXPECT_EQ(Read(root_ + "/devices/pf0/ecn/enable"), "1\n");
  auto d = Open("class/net/pf0/./ecn/../ecn", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  close(*d);
}

TEST_P(OpenBeneathTest, NeverLeavesTheRootThroughALinkOrDotDot) {
  for (std::string rel : {"class/net/evil/victim", "devices/pf0/ecn/abs", "devices/pf0/ecn/rel",
                          "devices/pf0/ecn/magic", "../outside/victim", "class/../../outside/victim",
                          "/etc/passwd"}) {
    auto fd = Open(rel, O_WRONLY | O_TRUNC);
    EXPECT_FALSE(fd.ok()) << rel;
    if (fd.ok()) close(*fd);
    EXPECT_NE(fd.status().message().find(rel), std::string::npos) << fd.status().message();
  }
  EXPECT_EQ(Read(outside_ + "/victim"), "precious\n");
}

TEST_P(OpenBeneathTest, MissingIsNotFoundAndALinkLoopIsAnError) {
  auto fd = Open("class/net/pf1/ecn/enable", O_RDONLY);
  EXPECT_EQ(fd.status().code(), StatusCode::kNotFound) << fd.status().ToString();
  fd = Open("loop1", O_RDONLY);
  EXPECT_FALSE(fd.ok());
  EXPECT_NE(fd.status().code(), StatusCode::kNotFound);
}

INSTANTIATE_TEST_SUITE_P(Methods, OpenBeneathTest,
                         ::testing::Values(BeneathMethod::kAuto, BeneathMethod::kWalk),
                         [](const auto& info) {
                           return info.param == BeneathMethod::kAuto ? "Openat2" : "Walk";
                         });

// An admin's configuration file: mounted from a ConfigMap it is a link into ..data/, which is
// followed; anything but a regular file (a FIFO would block a plain open and read) is refused
// at once; and the errors leave the path to the caller.
TEST(ReadConfigFileTest, ReadsARegularFileThroughLinksAndRefusesAnythingElse) {
  testing::TempDir t;
  const std::string dir = t.path();
  ASSERT_EQ(mkdir((dir + "/..data").c_str(), 0755), 0);
  { std::ofstream(dir + "/..data/config.json") << "{\"pools\": []}\n"; }
  ASSERT_EQ(symlink("..data/config.json", (dir + "/config.json").c_str()), 0);
  auto text = ReadConfigFile(dir + "/config.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "{\"pools\": []}\n");

  auto missing = ReadConfigFile(dir + "/none.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "open: No such file or directory");

  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);  // no writer: a blocking open would hang
  auto fifo = ReadConfigFile(dir + "/fifo");
  EXPECT_EQ(fifo.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(fifo.status().message(), "not a regular file");
  EXPECT_EQ(ReadConfigFile(dir + "/..data").status().code(), StatusCode::kFailedPrecondition);

  { std::ofstream(dir + "/big.json") << std::string(100, 'x'); }
  auto big = ReadConfigFile(dir + "/big.json", 99);
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(big.status().message(), "larger than 99 bytes");
  EXPECT_TRUE(ReadConfigFile(dir + "/big.json", 100).ok());
}

// The one safe reader of our own files: a symlink, a FIFO (which a plain open would wait on
// forever), a directory or a file over the cap is refused at once, with the cause; a trust check
// sees the opened file before anything is read.
TEST(ReadRegularFileTest, RefusesLinksFifosDirectoriesAndOversizedFilesAtOnce) {
  testing::TempDir t;
  const std::string dir = t.path();
  { std::ofstream(dir + "/ours.json") << "{}"; }
  auto ours = ReadRegularFile(dir + "/ours.json", 1024);
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  EXPECT_EQ(*ours, "{}");

  testing::PlantSymlink(dir + "/ours.json", dir + "/link.json");
  auto link = ReadRegularFile(dir + "/link.json", 1024);
  EXPECT_EQ(link.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(link.status().message(), "is a symlink");
  EXPECT_TRUE(ReadRegularFile(dir + "/link.json", 1024, FileLinks::kFollow).ok());

  testing::PlantFifo(dir + "/fifo");
  for (FileLinks links : {FileLinks::kRefuse, FileLinks::kFollow}) {
    StatusOr<std::string> fifo = InternalError("not called");
    EXPECT_TRUE(testing::ReturnsWithoutBlockingOn(
        dir + "/fifo", [&] { fifo = ReadRegularFile(dir + "/fifo", 1024, links); }));
    EXPECT_EQ(fifo.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(fifo.status().message(), "not a regular file");
  }
  // A link to a FIFO is refused as a link, never opened.
  testing::PlantSymlink(dir + "/fifo", dir + "/fifo-link");
  EXPECT_EQ(ReadRegularFile(dir + "/fifo-link", 1024).status().message(), "is a symlink");

  EXPECT_EQ(ReadRegularFile(dir, 1024).status().message(), "not a regular file");

  testing::PlantFile(dir + "/big", 1025);
  auto big = ReadRegularFile(dir + "/big", 1024);
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(big.status().message(), "larger than 1024 bytes");
  EXPECT_TRUE(ReadRegularFile(dir + "/big", 1025).ok());

  EXPECT_EQ(ReadRegularFile(dir + "/none", 1024).status().code(), StatusCode::kNotFound);

  bool judged = false;
  auto refused = ReadRegularFile(dir + "/ours.json", 1024, FileLinks::kRefuse, [&](const struct stat& st) {
    judged = S_ISREG(st.st_mode) && st.st_size == 2;
    return FailedPreconditionError("owned by someone else");
  });
  EXPECT_TRUE(judged);
  EXPECT_EQ(refused.status().message(), "owned by someone else");
}

TEST(PathTest, BasenameAndDirnameSplitAtTheLastSlash) {
  EXPECT_EQ(Basename("../../devices/pci0000:5d/0000:5e:00.2"), "0000:5e:00.2");
  EXPECT_EQ(Basename("mlx5_0"), "mlx5_0");
  EXPECT_EQ(Dirname("class/infiniband/mlx5_0"), "class/infiniband");
  EXPECT_EQ(Dirname("mlx5_0"), "");
}

}  // namespace
}  // namespace rdmak8s
