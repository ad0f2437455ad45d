// Which RDMA devices a pod holds through DRA claims, on the node's disk: the DRA driver writes a
// record per (pod, claim) when it prepares a claim reserved for the pod, and removes it when the
// claim is unprepared; the CNI, which sees only K8S_POD_UID, reads the pod's records to find the
// device to wire (issue 12, item 5).
//
// Layout: <dir>/<pod_uid>/<claim_uid>.<driver>.json, one JSON object per file (version 1): one
// record per (pod, claim, driver), so two DRA drivers that each hold devices of one claim (two
// requests served by two drivers, or two instances of ours under two --driver-name) keep
// separate records, and unprepare by one leaves the other's (issue 23, item 7). A driver of
// before that wrote <dir>/<pod_uid>/<claim_uid>.json; the reader still reads such a record, and
// the writer and the remover of a driver drop the old-layout record of the claim when it names
// no device of another driver (an upgrade with pods running keeps working). The writer
// makes <dir> and each <dir>/<pod_uid> private directories (EnsurePrivateDir: ours, 0700) and
// replaces files atomically (WriteFileAtomic). The reader trusts only what the writer could have
// made: <dir> and the pod directory must be real directories owned by the user it runs as (root
// on a node) and writable by nobody else, and each record a regular file with the same owner,
// opened without following symlinks; anything else is refused (kFailedPrecondition naming the
// path), never silently skipped. Pod and claim UIDs are used as file names only when they are
// plain names ([A-Za-z0-9-], at most 128 characters), the driver name only when it is a DNS
// subdomain of at most 63 characters (what resource.k8s.io allows): kInvalidArgument otherwise.
// A claim UID has no '.', so the file name splits into claim and driver at its first '.'.
#pragma once

#include <string>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

struct PodClaimDevice {
  std::string request;   // the claim's request that got the device
  std::string driver;    // the DRA driver name
  std::string pool;
  std::string device;    // DRA device name in the ResourceSlice
  std::string rdma_dev;  // "mlx5_0" when prepared
  std::string bus_id;    // PCI or auxiliary address; "" for a soft device (rxe, siw)
  friend bool operator==(const PodClaimDevice&, const PodClaimDevice&) = default;
};

struct PodClaimRecord {
  std::string claim_namespace;
  std::string claim_name;
  std::string claim_uid;
  std::vector<PodClaimDevice> devices;
  friend bool operator==(const PodClaimRecord&, const PodClaimRecord&) = default;
};

// Whether `uid` can name a record's file or directory: a plain name ([A-Za-z0-9-], 1 to 128
// characters). kInvalidArgument naming `what` ("pod UID") and the value, escaped, otherwise.
// The writer, the remover and the reader all check with it: a UID it refuses was never written.
Status CheckRecordUid(const std::string& what, const std::string& uid);

// Whether `driver` can name a record's file: a DNS subdomain ([a-z0-9.-], labels starting and
// ending with an alphanumeric), 1 to 63 characters. kInvalidArgument naming it otherwise.
Status CheckRecordDriver(const std::string& driver);

// Writes (or replaces) <dir>/<pod_uid>/<record.claim_uid>.<driver>.json, then drops the
// claim's old-layout record if it names no device of another driver.
Status WritePodClaimRecord(const std::string& dir, const std::string& pod_uid,
                           const std::string& driver, const PodClaimRecord& record);
// Removes `driver`'s record of `claim_uid` for the pod, the claim's old-layout record if it
// names no device of another driver (an unreadable one goes too: only a driver wrote there),
// and the pod directory once it is empty. A record that is not there is success (unprepare
// may run twice); another driver's record of the same claim stays.
Status RemovePodClaimRecord(const std::string& dir, const std::string& pod_uid,
                            const std::string& driver, const std::string& claim_uid);
// Every record of `pod_uid`, of every driver and of both layouts, ordered by file name (claim
// UID, then driver). kNotFound when the pod has none (no directory, or an empty one); a record
// that cannot be read or parsed is an error naming it.
StatusOr<std::vector<PodClaimRecord>> ReadPodClaimRecords(const std::string& dir,
                                                          const std::string& pod_uid);

}  // namespace rdmak8s
