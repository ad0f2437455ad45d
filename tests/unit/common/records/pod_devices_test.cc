#include "rdmak8s/records/pod_devices.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rdmak8s/base/strings.h"
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
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-b", "mlx5_1")).ok());
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).ok());
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
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).ok());
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-b", "mlx5_1")).ok());
  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", "uid-a").ok());
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1")->size(), 1u);
  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", "uid-b").ok());
  EXPECT_FALSE(fs::exists(dir + "/pod-1"));
  EXPECT_TRUE(RemovePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", "uid-b").ok());
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1").status().code(), StatusCode::kNotFound);
}

TEST(PodDevices, UidsThatAreNotPlainNamesAreRefused) {
  testing::TempDir tmp;
  EXPECT_EQ(WritePodClaimRecord(tmp.path(), "../x", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(WritePodClaimRecord(tmp.path(), "pod", "rdma.rdmak8s.io", Record("a/b", "mlx5_0")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadPodClaimRecords(tmp.path(), "..").status().code(), StatusCode::kInvalidArgument);
}

TEST(PodDevices, RecordsOthersCouldHaveWrittenAreRefused) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).ok());
  // A pod directory others may write to.
  ASSERT_EQ(chmod((dir + "/pod-1").c_str(), 0777), 0);
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1").status().code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(chmod((dir + "/pod-1").c_str(), 0700), 0);
  // A record that is a symlink to a file planted elsewhere.
  std::string planted = tmp.path() + "/planted.json";
  fs::copy_file(dir + "/pod-1/uid-a.rdma.rdmak8s.io.json", planted);
  fs::remove(dir + "/pod-1/uid-a.rdma.rdmak8s.io.json");
  fs::create_symlink(planted, dir + "/pod-1/uid-a.rdma.rdmak8s.io.json");
  EXPECT_FALSE(ReadPodClaimRecords(dir, "pod-1").ok());
  // A pod directory that is a symlink.
  fs::remove_all(dir + "/pod-1");
  fs::create_directory(tmp.path() + "/elsewhere");
  fs::create_directory_symlink(tmp.path() + "/elsewhere", dir + "/pod-1");
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1").status().code(), StatusCode::kFailedPrecondition);
}

// Issue 32 item 4: a record's nesting is bounded by the one reader, as every input's is.
TEST(PodDevices, ARecordNestedPastTheReadersBoundIsRefusedNamingIt) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).ok());
  std::ofstream(dir + "/pod-1/uid-a.rdma.rdmak8s.io.json", std::ios::trunc)
      << R"({"version": 1, "devices": )" << std::string(200, '[') << std::string(200, ']') << "}";
  auto read = ReadPodClaimRecords(dir, "pod-1");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("nested deeper than 128 levels"), std::string::npos)
      << read.status().message();
}

// The CNI reads these records during ADD: a FIFO at a record's name must not block it, and a
// file larger than any record is refused unread.
TEST(PodDevices, AFifoOrAnOversizedFileAtARecordIsRefusedWithoutBlocking) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).ok());
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
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).ok());
  {
    std::ofstream out(dir + "/pod-1/uid-a.rdma.rdmak8s.io.json", std::ios::trunc);
    out << "{\"version\": 1}";
  }
  auto r = ReadPodClaimRecords(dir, "pod-1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("uid-a.rdma.rdmak8s.io.json"), std::string::npos)
      << r.status().message();
}

// A record is read by the one strict reader: the wrong field is named by its $.path and type.
TEST(PodDevices, CorruptRecordNamesTheWrongFieldByPath) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "rdma.rdmak8s.io", Record("uid-a", "mlx5_0")).ok());
  const std::pair<const char*, const char*> cases[] = {
      {R"({"version":1,"claim":{"namespace":"t","name":"c","uid":7},"devices":[]})",
       "$.claim.uid: not a string (number)"},
      {R"({"version":1,"claim":"x","devices":[]})", "$.claim: not an object (string)"},
      {R"({"version":1,"claim":{"namespace":"t","name":"c","uid":"u"}})", "$.devices: missing"},
      {R"({"version":1,"claim":{"namespace":"t","name":"c","uid":"u"},"devices":[{"request":"r"}]})",
       "$.devices[0].driver: missing"},
  };
  for (const auto& [text, want] : cases) {
    std::ofstream(dir + "/pod-1/uid-a.rdma.rdmak8s.io.json", std::ios::trunc) << text;
    auto r = ReadPodClaimRecords(dir, "pod-1");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
}

PodClaimRecord RecordOf(const std::string& driver, const std::string& request, const std::string& rdma_dev) {
  return {"team", "nic-claim", "uid-a", {{request, driver, "node-a", "dev-" + rdma_dev, rdma_dev, ""}}};
}

// Two drivers (two requests of one claim served by two drivers, or two instances of ours under
// two --driver-name) each keep their own record of the claim: neither overwrites nor removes the
// other's (issue 23, item 7).
TEST(PodDevices, TwoDriversKeepSeparateRecordsOfOneClaim) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods";
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "a.example.com", RecordOf("a.example.com", "ib", "mlx5_0")).ok());
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "b.example.com", RecordOf("b.example.com", "roce", "mlx5_1")).ok());
  auto both = ReadPodClaimRecords(dir, "pod-1");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0], RecordOf("a.example.com", "ib", "mlx5_0"));
  EXPECT_EQ((*both)[1], RecordOf("b.example.com", "roce", "mlx5_1"));

  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "a.example.com", "uid-a").ok());
  auto left = ReadPodClaimRecords(dir, "pod-1");
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(left->front(), RecordOf("b.example.com", "roce", "mlx5_1"));
  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "b.example.com", "uid-a").ok());
  EXPECT_FALSE(fs::exists(dir + "/pod-1"));
}

// A record of a driver from before per-driver files (<claim_uid>.json) is still read, and goes
// when its own driver writes or removes the claim's record, never when another driver does.
TEST(PodDevices, AnOldLayoutRecordIsReadAndDroppedOnlyByItsDriver) {
  testing::TempDir tmp;
  const std::string dir = tmp.path() + "/pods";
  auto plant_old = [&](const std::string& driver, const std::string& rdma_dev) {
    ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", driver, RecordOf(driver, "nic", rdma_dev)).ok());
    fs::rename(dir + "/pod-1/uid-a." + driver + ".json", dir + "/pod-1/uid-a.json");
  };
  plant_old("a.example.com", "mlx5_0");
  auto read = ReadPodClaimRecords(dir, "pod-1");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ(read->front(), RecordOf("a.example.com", "nic", "mlx5_0"));

  // Another driver's prepare and unprepare of the same claim leave it.
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "b.example.com", RecordOf("b.example.com", "nic", "mlx5_1")).ok());
  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "b.example.com", "uid-a").ok());
  EXPECT_TRUE(fs::exists(dir + "/pod-1/uid-a.json"));
  // Its own driver's unprepare removes it, and the pod directory with it.
  ASSERT_TRUE(RemovePodClaimRecord(dir, "pod-1", "a.example.com", "uid-a").ok());
  EXPECT_FALSE(fs::exists(dir + "/pod-1"));

  // Its own driver's prepare (a restart after the upgrade re-prepares) replaces it.
  plant_old("a.example.com", "mlx5_0");
  ASSERT_TRUE(WritePodClaimRecord(dir, "pod-1", "a.example.com", RecordOf("a.example.com", "nic", "mlx5_0")).ok());
  EXPECT_FALSE(fs::exists(dir + "/pod-1/uid-a.json"));
  EXPECT_TRUE(fs::exists(dir + "/pod-1/uid-a.a.example.com.json"));
  EXPECT_EQ(ReadPodClaimRecords(dir, "pod-1")->size(), 1u);
}

TEST(PodDevices, DriverNamesThatAreNotDnsSubdomainsAreRefused) {
  testing::TempDir tmp;
  for (const std::string& bad : std::vector<std::string>{"", "../x", "a/b", "a..b", ".a", "a.", "-a.b", "a-.b", "Rdma.io",
                                "a_b.io", "x\n", std::string(64, 'a')}) {
    Status w = WritePodClaimRecord(tmp.path(), "pod-1", bad, RecordOf("x", "nic", "mlx5_0"));
    EXPECT_EQ(w.code(), StatusCode::kInvalidArgument) << Quoted(bad);
    EXPECT_NE(w.message().find("driver name"), std::string::npos) << w.message();
    EXPECT_EQ(RemovePodClaimRecord(tmp.path(), "pod-1", bad, "uid-a").code(), StatusCode::kInvalidArgument)
        << Quoted(bad);
  }
  EXPECT_FALSE(fs::exists(tmp.path() + "/pod-1"));
  for (const std::string& good : std::vector<std::string>{"rdma.rdmak8s.io", "a", "a-b.c-d", std::string(63, 'a')}) {
    EXPECT_TRUE(CheckRecordDriver(good).ok()) << good;
  }
}

}  // namespace
}  // namespace rdmak8s
