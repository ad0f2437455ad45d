// ClaimStatusReporter: keeps the status.devices entries of every claim this driver prepared
// saying what the pod got (KEP-4817, issue 34 item 1), and removes them at unprepare.
//
// Prepared(claim) (the preparer, after a prepare; main, for the checkpoint's claims at start)
// asks for the claim's entries to be written; Unprepared(uid) for ours to be removed. The loop
// (Start) then, and every refresh_interval, builds each claim's entries from the device catalog
// and the CNI's attachment facts (rdmak8s/records/attachment_facts.h, read from pod_devices_dir)
// and writes them through the ClaimStatusWriter when what they are built from changed since the
// last write (so a claim that changes nothing costs a directory read, never a request). The status
// is informative: nothing here ever fails a prepare or an unprepare, and a prepare never waits
// for it.
//
// Failures: a refused write (kPermissionDenied: the RBAC of resourceclaims/driver is missing) is
// logged once per claim as an error naming the missing permission, and counted
// (rdmak8s_dra_claim_status_writes_total{result="forbidden"}); any other failure is logged and
// counted as "error". Either is retried with backoff (1 s doubling to 60 s) while the claim is
// prepared; a removal is given up after kMaxRemovalAttempts (the server drops the status when
// the claim is deallocated anyway). A claim gone from the server (kNotFound, or another UID)
// is not written again until its inputs change.
//
// Thread safety: Prepared, Unprepared and SyncOnce may be called from any thread; Start/Stop
// from one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "dra/checkpoint.h"
#include "dra/claim_status_writer.h"
#include "dra/device_catalog.h"
#include "dra/metrics.h"

namespace rdmak8s::dra {

struct ClaimStatusReporterOptions {
  std::string driver_name = "rdma.rdmak8s.io";
  std::string pod_devices_dir = "/run/rdmak8s/dra-pods";  // where the CNI's facts are
  std::chrono::milliseconds refresh_interval{2000};       // how often the facts are looked at
  std::chrono::milliseconds write_timeout{10000};         // one claim's update, retries included
  std::function<int64_t()> now;                           // Unix seconds; nullptr: the clock
};

class ClaimStatusReporter {
 public:
  static constexpr int kMaxRemovalAttempts = 8;

  // `writer`, `catalog` and `metrics` (may be null) are not owned and must outlive it.
  ClaimStatusReporter(ClaimStatusReporterOptions options, ClaimStatusWriter* writer,
                      const DeviceCatalog* catalog, DraMetrics* metrics = nullptr);
  ~ClaimStatusReporter();
  ClaimStatusReporter(const ClaimStatusReporter&) = delete;
  ClaimStatusReporter& operator=(const ClaimStatusReporter&) = delete;

  void Prepared(const PreparedClaim& claim);
  void Unprepared(const std::string& uid);
  // One pass on the calling thread: every claim that is due is written (or its entries
  // removed). What the loop runs; tests call it to wait for nothing.
  void SyncOnce();
  // Claims being reported or removed.
  size_t pending() const;

  void Start();
  void Stop();

 private:
  struct Claim {
    std::string namespace_name, name, uid;
    std::vector<PreparedDevice> devices;
    bool remove = false;
    std::string written;  // the inputs of the last successful write
    std::chrono::steady_clock::time_point next_attempt{};
    int failures = 0;
    bool forbidden_logged = false;
  };
  // What the entries of `c` are built from now, the facts read (for the build) and why they
  // could not be read ("" when they could).
  std::string Inputs(const Claim& c, std::vector<AttachmentFacts>* facts, std::string* facts_error) const;
  Status Write(const Claim& c, const std::vector<AttachmentFacts>& facts);
  void Failed(const std::string& uid, const Status& s);
  void Run();

  const ClaimStatusReporterOptions options_;
  ClaimStatusWriter* writer_;
  const DeviceCatalog* catalog_;
  DraMetrics* metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Claim> claims_;  // by UID; mu_
  bool stopping_ = false;                // mu_
  bool kicked_ = false;                  // mu_: Prepared/Unprepared since the last pass
  std::mutex sync_mu_;                   // one pass at a time
  std::thread thread_;
};

}  // namespace rdmak8s::dra
