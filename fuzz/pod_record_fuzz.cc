// Fuzz target: a pod's DRA device record as the CNI reads it at ADD (rdmak8s/records/pod_devices.h
// ReadPodClaimRecords), from a real records directory whose one record file holds the input.
// Input: the file's bytes.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument naming the record file;
//   - a record that reads, written back (WritePodClaimRecord) and read again, is the same.
#include <sys/stat.h>

#include <filesystem>

#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_files.h"
#include "rdmak8s/records/pod_devices.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmak8s;
  const std::string dir = fuzz::ScratchDir() + "/pods";
  const std::string pod = "pod-1";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  PodClaimRecord seed;
  seed.claim_uid = "claim-a";
  FUZZ_CHECK(WritePodClaimRecord(dir, pod, "rdma.rdmak8s.io", seed).ok(), "seed record");
  const std::string file = dir + "/" + pod + "/claim-a.rdma.rdmak8s.io.json";
  fuzz::WriteInput(file, fuzz::AsText(data, size));
  FUZZ_CHECK(chmod(file.c_str(), 0600) == 0, "chmod " + file);

  auto records = ReadPodClaimRecords(dir, pod);
  if (!records.ok()) {
    FUZZ_CHECK(records.status().code() == StatusCode::kInvalidArgument, records.status().ToString());
    FUZZ_CHECK(records.status().message().find(file) != std::string::npos, records.status().message());
    return 0;
  }
  FUZZ_CHECK(records->size() == 1, std::to_string(records->size()) + " records from one file");
  PodClaimRecord r = (*records)[0];
  // The writer names the file by the claim UID: write it under the UID the file was found as.
  r.claim_uid = "claim-a";
  FUZZ_CHECK(WritePodClaimRecord(dir, pod, "rdma.rdmak8s.io", r).ok(), "write back");
  auto again = ReadPodClaimRecords(dir, pod);
  FUZZ_CHECK(again.ok() && again->size() == 1, again.status().ToString());
  FUZZ_CHECK((*again)[0] == r, "record changed in a round trip");
  return 0;
}
