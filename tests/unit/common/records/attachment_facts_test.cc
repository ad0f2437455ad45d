// Tests of the CNI -> DRA driver attachment facts on the node's disk
// (rdmak8s/records/attachment_facts.h).
#include "rdmak8s/records/attachment_facts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/attachment_facts_sample.h"
#include "support/temp_dir.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;

AttachmentFacts Facts(std::string claim = "claim-1", std::string container = "c1") {
  AttachmentFacts f = testing::SampleAttachmentFacts(std::move(claim), std::move(container));
  f.ips.push_back("fd00::5/64");
  return f;
}

std::string FilesUnder(const std::string& dir) {
  std::string out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out += fs::relative(e.path(), dir).string() + "\n";
  }
  return out;
}

TEST(AttachmentFacts, WrittenFactsAreReadBackForTheirClaimAndDriverOnly) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WriteAttachmentFacts(dir, Facts()).ok());
  AttachmentFacts other = Facts();
  other.driver = "gpu.example.com";
  other.device = "gpu-0";
  ASSERT_TRUE(WriteAttachmentFacts(dir, other).ok());
  AttachmentFacts longer = Facts();  // a driver whose name starts with ours and a '.'
  longer.driver = "rdma.rdmak8s.io.example";
  ASSERT_TRUE(WriteAttachmentFacts(dir, longer).ok());
  auto read = ReadAttachmentFacts(dir, "claim-1", "rdma.rdmak8s.io");
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0], Facts());
  struct stat st;
  ASSERT_EQ(stat((dir + "/.attachments/claim-1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto none = ReadAttachmentFacts(dir, "claim-2", "rdma.rdmak8s.io");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(AttachmentFacts, RemovingAnAttachmentTakesItsFilesUnderEveryClaimAndLeavesOthers) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WriteAttachmentFacts(dir, Facts("claim-1", "c1")).ok());
  ASSERT_TRUE(WriteAttachmentFacts(dir, Facts("claim-2", "c1")).ok());
  ASSERT_TRUE(WriteAttachmentFacts(dir, Facts("claim-2", "c2")).ok());
  ASSERT_TRUE(RemoveAttachmentFacts(dir, "roce", "c1", "net1").ok());
  EXPECT_FALSE(fs::exists(dir + "/.attachments/claim-1"));
  auto left = ReadAttachmentFacts(dir, "claim-2", "rdma.rdmak8s.io");
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].container_id, "c2");
  // A DEL that runs twice, or on a node that never wrote any, is fine.
  EXPECT_TRUE(RemoveAttachmentFacts(dir, "roce", "c1", "net1").ok());
  EXPECT_TRUE(RemoveAttachmentFacts(tmp.path() + "/none", "roce", "c1", "net1").ok());
  ASSERT_TRUE(RemoveClaimAttachmentFacts(dir, "claim-2").ok());
  EXPECT_EQ(FilesUnder(dir), "");
}

TEST(AttachmentFacts, FactsThatDoNotCheckAreNeverWritten) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods";
  auto refused = [&](AttachmentFacts f) { return WriteAttachmentFacts(dir, f).message(); };
  AttachmentFacts f = Facts();
  f.ips = {"10.0.0.5"};
  EXPECT_NE(refused(f).find("ips \"10.0.0.5\": not an address in canonical CIDR form"), std::string::npos) << refused(f);
  f = Facts();
  f.ips = {"FD00:0::5/64"};
  EXPECT_NE(refused(f).find("canonical"), std::string::npos);
  f = Facts();
  f.ips.assign(kMaxAttachmentIps + 1, "10.0.0.5/24");
  EXPECT_NE(refused(f).find("ips: 17 addresses, at most 16"), std::string::npos) << refused(f);
  f = Facts();
  f.claim_uid = "../x";
  EXPECT_NE(refused(f).find("claimUid"), std::string::npos);
  f = Facts();
  f.gid = "fe80::1";
  EXPECT_NE(refused(f).find("gid"), std::string::npos);
  f = Facts();
  f.ifname = "a/b";
  EXPECT_NE(refused(f).find("ifname"), std::string::npos);
  EXPECT_EQ(FilesUnder(dir), "");
}

class PlantedFacts : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() + "/pods";
    ASSERT_TRUE(WriteAttachmentFacts(dir_, Facts()).ok());
    for (const auto& e : fs::directory_iterator(dir_ + "/.attachments/claim-1")) path_ = e.path();
  }
  std::string Read() {
    auto r = ReadAttachmentFacts(dir_, "claim-1", "rdma.rdmak8s.io");
    return r.ok() ? "ok" : r.status().message();
  }
  void Plant(const std::string& text) {
    ASSERT_EQ(unlink(path_.c_str()), 0);
    std::ofstream(path_) << text;
    chmod(path_.c_str(), 0600);
  }
  testing::TempDir tmp_;
  std::string dir_, path_;
};

TEST_F(PlantedFacts, AFileLargerThanTheBoundIsRefusedNamingIt) {
  Plant(std::string(kMaxAttachmentFactsBytes + 1, ' '));
  EXPECT_NE(Read().find(path_), std::string::npos) << Read();
}

TEST_F(PlantedFacts, AFileWritableByOthersIsRefused) {
  ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
  EXPECT_NE(Read().find("writable by group or others"), std::string::npos) << Read();
}

TEST_F(PlantedFacts, ASymlinkIsRefused) {
  ASSERT_EQ(unlink(path_.c_str()), 0);
  ASSERT_EQ(symlink("/etc/hostname", path_.c_str()), 0);
  EXPECT_NE(Read().find(path_), std::string::npos) << Read();
  EXPECT_NE(Read(), "ok");
}

TEST_F(PlantedFacts, AnUnknownFieldOrABadValueIsRefusedNamingIt) {
  std::string text = AttachmentFactsToJson(Facts());
  Plant(text.substr(0, text.rfind('}')) + ",\"evil\":1}");
  EXPECT_NE(Read().find("$.evil: unknown field"), std::string::npos) << Read();
  Plant(AttachmentFactsToJson(Facts()).replace(AttachmentFactsToJson(Facts()).find("10.0.0.5/24"), 11, "10.0.0.5/99"));
  EXPECT_NE(Read().find("10.0.0.5/99"), std::string::npos) << Read();
}

TEST_F(PlantedFacts, AFileWhoseContentsNameAnotherDeviceThanItsNameIsRefused) {
  AttachmentFacts f = Facts();
  f.device = "mlx5-9";
  Plant(AttachmentFactsToJson(f));
  EXPECT_NE(Read().find("its contents name another"), std::string::npos) << Read();
}

}  // namespace
}  // namespace rdmak8s
