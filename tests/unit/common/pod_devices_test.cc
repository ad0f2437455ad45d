#include "rdmak8s/pod_devices.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/planted_files.h"
#include "support/temp_dir.h"

namespace rdmak8s {
namespace {

namespace fs = std::filesystem;

PodClaimRecord Record(std::string uid, std::string rdma_dev) {
  return {"team", "claim-" + uid, uid, {{"nic", "rdma.rdmak8s.io", "node-a", "mlx5-0", rdma_dev, "0000:3b:00.0"}}};
}

TEST(PodDevices, WrittenRecordsAreReadBackByPodUidInClaimOrder) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", Record("uid-b", "mlx5_1")).ok());
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", Record("uid-a", "mlx5_0")).ok());
  auto records = ReadPodClaimRecords(dir, "pod-1");
  ASSERT_TRUE(records.ok()) << records.status().message();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0], Record("uid-a", "mlx5_0"));
  EXPECT_EQ((*records)[1], Record("uid-b", "mlx5_1"));
  struct stat st;
  ASSERT_EQ(stat((dir + "/pod-1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(PodDevices, PodWithoutRecordsIsNotFoundAndRemovalRunsTwice) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", Record("uid-a", "mlx5_0")).ok());
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", Record("uid-b", "mlx5_1")).ok());
  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "uid-a").ok());
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1")->size(), 1u);
  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "uid-b").ok());
  EXPECT_FALSE(fs::exists(dir + "/pod-1"));
  EXPECT_TRUE(RemovePodClaimRecord(dir, "pod-1", "uid-b").ok());
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1").status().code(), StatusCode::kNotFound);
}

TEST(PodDevices, UidsThatAreNotPlainNamesAreRefused) {
  testing::TempDir tmp;
  EXPECT_EQ(WritePodClaimRecord(tmp.path(), "../x", Record("uid-a", "mlx5_0")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WritePodClaimRecord(tmp.path(), "pod", Record("a/b", "mlx5_0")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadPodClaimRecords(tmp.path(), "..").status().code(), StatusCode::kInvalidArgument);
}

TEST(PodDevices, RecordsOthersCouldHaveWrittenAreRefused) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", Record("uid-a", "mlx5_0")).ok());
  // A pod directory others may write to.
  ASSERT_EQ(chmod((dir + "/pod-1").c_str(), 0777), 0);
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1").status().code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(chmod((dir + "/pod-1").c_str(), 0700), 0);
  // A record that is a symlink to a file planted elsewhere.
  std::string planted = tmp.path() + "/planted.json";
  fs::copy_file(dir + "/pod-1/uid-a.json", planted);
  fs::remove(dir + "/pod-1/uid-a.json");
  fs::create_symlink(planted, dir + "/pod-1/uid-a.json");
  EXPECT_FALSE(ReadPodClaimRecords(dir, "pod-1").ok());
  // A pod directory that is a symlink.
  fs::remove_all(dir + "/pod-1");
  fs::create_directory(tmp.path() + "/elsewhere");
  fs::create_directory_symlink(tmp.path() + "/elsewhere", dir + "/pod-1");
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1").status().code(), StatusCode::kFailedPrecondition);
}

// The CNI reads these records during ADD: a FIFO at a record's name must not block it, and a
// file larger than any record is refused unread.
TEST(PodDevices, AFifoOrAnOversizedFileAtARecordIsRefusedWithoutBlocking) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", Record("uid-a", "mlx5_0")).ok());
  const std::string fifo = dir + "/pod-1/uid-b.json";
  testing::PlantFifo(fifo);
  StatusOr<std::vector<PodClaimRecord>> r = InternalError("not called");
  EXPECT_TRUE(testing::ReturnsWithoutBlockingOn(fifo, [&] { r = ReadPodClaimRecords(dir, "pod-1"); }));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "pod record " + fifo + ": not a regular file");
  fs::remove(fifo);

  testing::PlantFile(dir + "/pod-1/uid-b.json", (size_t{1} << 20) + 1);
  r = ReadPodClaimRecords(dir, "pod-1");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("uid-b.json: larger than"), std::string::npos) << r.status().message();
}

TEST(PodDevices, CorruptRecordIsAnErrorNamingTheFile) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", Record("uid-a", "mlx5_0")).ok());
  {
    std::ofstream out(dir + "/pod-1/uid-a.json", std::ios::trunc);
    out << "{\"version\": 1}";
  }
  auto r = ReadPodClaimRecords(dir, "pod-1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("uid-a.json"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace rdmak8s
