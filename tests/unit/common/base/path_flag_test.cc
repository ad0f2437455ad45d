#include "rdmak8s/base/path_flag.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;

// The working directory of the test, changed for one test and restored.
class InDirectory {
 public:
  explicit InDirectory(const std::string& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~InDirectory() { fs::current_path(old_); }
  InDirectory(const InDirectory&) = delete;
  InDirectory& operator=(const InDirectory&) = delete;

 private:
  fs::path old_;
};

std::string Parse(std::vector<std::string> args, const std::string& initial = "") {
  CLI::App app;
  std::string dir = initial;
  app.add_option("--dir", dir)->transform(AbsolutePath());
  std::vector<const char*> argv{"prog"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return dir;
}

TEST(PathFlagTest, RelativePathBecomesAbsoluteAgainstTheStartDirectory) {
  testing::TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string real = fs::canonical(tmp.path()).string();
  InDirectory in(real);
  EXPECT_EQ(Parse({"--dir", "plug"}), real + "/plug");
  EXPECT_EQ(Parse({"--dir", "./a/../plug/"}), real + "/plug");
  EXPECT_EQ(Parse({"--dir=plug"}), real + "/plug");
}

TEST(PathFlagTest, AbsoluteAndEmptyPathsStayAsTheyAre) {
  EXPECT_EQ(Parse({"--dir", "/var/lib/kubelet/plugins/x"}), "/var/lib/kubelet/plugins/x");
  EXPECT_EQ(Parse({"--dir", "/var//lib/./x/"}), "/var/lib/x");
  EXPECT_EQ(Parse({"--dir", "/"}), "/");
  EXPECT_EQ(Parse({}, ""), "");
  EXPECT_EQ(Parse({"--dir", ""}), "");
}

}  // namespace
}  // namespace rdmak8s
