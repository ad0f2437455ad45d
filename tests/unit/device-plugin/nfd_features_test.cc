// The node-feature-discovery feature file (device-plugin/nfd_features.h): its lines, an atomic
// write NFD never sees half done (no file of ours without a leading '.' but the feature file),
// no rewrite when nothing changed, removal when nothing is advertised.
#include "device-plugin/nfd_features.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/planted_files.h"
#include "support/temp_dir.h"

namespace rdmak8s::dp {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(NfdFeaturesTest, RendersTransportsNetnsModeAndLosslessReadyAsNfdLines) {
  NodeFeatures f;
  f.transports = {Transport::kRoce, Transport::kIb};
  f.netns_mode = RdmaNetnsMode::kExclusive;
  f.lossless_ready = true;
  EXPECT_EQ(RenderNfdFeatures(f),
            "# rdmak8s-device-plugin: removed when it stops advertising devices\n"
            "rdma.rdmak8s.io/transport-ib=true\n"
            "rdma.rdmak8s.io/transport-roce=true\n"
            "rdma.rdmak8s.io/netns-mode=exclusive\n"
            "rdma.rdmak8s.io/lossless-ready=true\n");
  f.lossless_ready = false;
  f.netns_mode.reset();
  f.transports = {Transport::kIwarp};
  EXPECT_EQ(RenderNfdFeatures(f),
            "# rdmak8s-device-plugin: removed when it stops advertising devices\n"
            "rdma.rdmak8s.io/transport-iwarp=true\n"
            "rdma.rdmak8s.io/lossless-ready=false\n");
}

TEST(NfdFeaturesTest, NothingAdvertisedRendersNothing) {
  NodeFeatures f;
  f.netns_mode = RdmaNetnsMode::kShared;
  f.lossless_ready = true;
  EXPECT_EQ(RenderNfdFeatures(f), "");
  f.transports = {Transport::kUnknown};
  EXPECT_EQ(RenderNfdFeatures(f), "");
}

TEST(NfdFeaturesTest, UpdateWritesTheFileAndLeavesNoOtherFileNfdWouldRead) {
  rdmak8s::testing::TempDir tmp;
  NfdFeatureFile file(tmp.path());
  NodeFeatures f;
  f.transports = {Transport::kRoce};
  f.netns_mode = RdmaNetnsMode::kShared;
  ASSERT_TRUE(file.Update(f).ok());
  EXPECT_EQ(file.path(), tmp.path() + "/rdmak8s");
  EXPECT_EQ(Read(file.path()), RenderNfdFeatures(f));
  EXPECT_EQ(Names(tmp.path()), std::vector<std::string>{"rdmak8s"});
}

TEST(NfdFeaturesTest, UpdateRewritesOnlyWhatChanged) {
  rdmak8s::testing::TempDir tmp;
  NfdFeatureFile file(tmp.path());
  NodeFeatures f;
  f.transports = {Transport::kRoce};
  ASSERT_TRUE(file.Update(f).ok());
  struct stat before{};
  ASSERT_EQ(stat(file.path().c_str(), &before), 0);
  ASSERT_TRUE(file.Update(f).ok());
  struct stat same{};
  ASSERT_EQ(stat(file.path().c_str(), &same), 0);
  EXPECT_EQ(same.st_ino, before.st_ino) << "an unchanged file is not replaced";
  f.lossless_ready = false;
  ASSERT_TRUE(file.Update(f).ok());
  struct stat after{};
  ASSERT_EQ(stat(file.path().c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino) << "replaced by a rename, never rewritten in place";
  EXPECT_NE(Read(file.path()).find("lossless-ready=false"), std::string::npos);
}

TEST(NfdFeaturesTest, NothingToAdvertiseRemovesTheFileAndRemoveTwiceIsFine) {
  rdmak8s::testing::TempDir tmp;
  NfdFeatureFile file(tmp.path());
  NodeFeatures f;
  f.transports = {Transport::kIb};
  ASSERT_TRUE(file.Update(f).ok());
  ASSERT_TRUE(fs::exists(file.path()));
  ASSERT_TRUE(file.Update(NodeFeatures{}).ok());
  EXPECT_FALSE(fs::exists(file.path()));
  ASSERT_TRUE(file.Update(f).ok());
  EXPECT_TRUE(file.Remove().ok());
  EXPECT_TRUE(file.Remove().ok());
  EXPECT_TRUE(Names(tmp.path()).empty());
}

TEST(NfdFeaturesTest, AMissingDirectoryIsAnErrorNamingIt) {
  rdmak8s::testing::TempDir tmp;
  NfdFeatureFile file(tmp.path() + "/features.d");
  NodeFeatures f;
  f.transports = {Transport::kRoce};
  Status s = file.Update(f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(tmp.path() + "/features.d/.rdmak8s"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("NFD feature file"), std::string::npos) << s.message();
}

// features.d is shared with NFD: what is at our file's name is read back through the one safe
// reader, so a FIFO there cannot stall the plugin, and a link (to a file that happens to hold our
// labels) or a huge file is not taken for ours: each is an error naming the path.
TEST(NfdFeaturesTest, APlantedFifoLinkOrHugeFileAtTheFeatureFileIsRefusedWithoutBlocking) {
  NodeFeatures f;
  f.transports = {Transport::kRoce};
  {
    rdmak8s::testing::TempDir tmp;
    NfdFeatureFile file(tmp.path());
    rdmak8s::testing::PlantFifo(file.path());
    Status s = InternalError("not called");
    EXPECT_TRUE(rdmak8s::testing::ReturnsWithoutBlockingOn(file.path(), [&] { s = file.Update(f); }));
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_EQ(s.message(), "NFD feature file " + file.path() + " (not replaced): not a regular file");
  }
  {
    rdmak8s::testing::TempDir tmp;
    NfdFeatureFile file(tmp.path());
    { std::ofstream(tmp.path() + "/elsewhere") << RenderNfdFeatures(f); }
    rdmak8s::testing::PlantSymlink(tmp.path() + "/elsewhere", file.path());
    Status s = file.Update(f);
    EXPECT_EQ(s.message(), "NFD feature file " + file.path() + " (not replaced): is a symlink");
  }
  {
    rdmak8s::testing::TempDir tmp;
    NfdFeatureFile file(tmp.path());
    rdmak8s::testing::PlantFile(file.path(), 64 * 1024 + 1);
    Status s = file.Update(f);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_EQ(s.message(), "NFD feature file " + file.path() + " (not replaced): larger than 65536 bytes");
  }
}

TEST(NfdFeaturesTest, AnEmptyDirectoryDisablesTheFile) {
  NfdFeatureFile file("");
  NodeFeatures f;
  f.transports = {Transport::kRoce};
  EXPECT_TRUE(file.Update(f).ok());
  EXPECT_TRUE(file.Remove().ok());
  EXPECT_EQ(file.path(), "");
}

}  // namespace
}  // namespace rdmak8s::dp
