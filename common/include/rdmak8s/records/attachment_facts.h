// What the CNI learned wiring a pod's DRA device, handed to the DRA driver on the node's disk
// (issue 34, item 1): the CNI has no API credentials, so the claim's status.devices entry
// (dra/claim_status.h) gets the pod's addresses, its RoCE v2 GID and GID index and the pod
// interface from here.
//
// Writer: the CNI (root on the node), after a successful ADD of a device one of the pod's DRA
// claims holds (rdmak8s/records/pod_devices.h), one file per (claim, driver, DRA device,
// attachment); it removes the attachment's files at DEL (and GC), found by the attachment alone
// (the claim may be gone by then). Reader: the DRA driver, for the claims it prepared; it removes a
// claim's directory at unprepare. Nobody else writes here (docs/trust.md).
//
// Layout: <pod_devices_dir>/.attachments/<claim_uid>/<driver>.<device>.<attachment>.json, where
// <attachment> is AttachmentKey(network, container_id, ifname): 16 hex digits, so DEL finds its
// files without the claim. ".attachments" cannot be a pod UID (those are plain names), so the
// pod records' directory and its mount are shared. Directories are private (EnsurePrivateDir),
// files 0600 and replaced atomically (WriteFileAtomic). The reader trusts only what the writer
// could have made (CheckOwnedByUs: directories and files owned by the user it runs as and
// writable by nobody else, files opened without following links), reads at most
// kMaxAttachmentFactsBytes per file and kMaxAttachmentFactsFiles files per claim, and validates
// every field (below); anything else is an error naming the file, never a silent skip.
//
// Pure validation plus file I/O. Thread safety: free functions; concurrent writers of one
// attachment's file are serialized by the CNI's state lock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

inline constexpr size_t kMaxAttachmentFactsBytes = 4096;
inline constexpr size_t kMaxAttachmentFactsFiles = 64;
// networkData.ips of a claim's device status holds at most 16 (NetworkDeviceDataMaxIPs).
inline constexpr size_t kMaxAttachmentIps = 16;
inline constexpr size_t kMaxAttachmentQosSettings = 16;

struct AttachmentFacts {
  // Which claim device: the claim's UID, the DRA driver, the device's name in its slice.
  std::string claim_uid;
  std::string driver;
  std::string device;
  std::string rdma_dev;  // "mlx5_1": the RDMA device the CNI wired
  // Which attachment (the CNI's own key): the netconf name, CNI_CONTAINERID, CNI_IFNAME.
  std::string network;
  std::string container_id;
  std::string ifname;
  std::vector<uint32_t> ports;         // the device's ports the attachment uses
  std::vector<std::string> ips;        // the pod interface's addresses, canonical CIDR ("10.0.0.5/24")
  std::string hardware_address;        // the pod interface's MAC (CNI result), "" when not known
  std::string gid;                     // RoCE v2 GID of the first address (GidForIp form), "" for IB/iWARP
  std::optional<uint32_t> gid_index;   // its index in the port's GID table
  std::optional<uint16_t> pkey;        // the netconf's PKey (IB), checked to be in the port's table
  std::vector<std::string> qos;        // the QoS settings applied ("trust", "pfc", "roceTos", ...)
  friend bool operator==(const AttachmentFacts&, const AttachmentFacts&) = default;
};

// 16 lower-case hex digits naming the attachment (network, container ID, interface).
std::string AttachmentKey(const std::string& network, const std::string& container_id,
                          const std::string& ifname);

// Whether `facts` may be written or taken as read: claim UID a plain name (CheckRecordUid),
// driver a DNS subdomain of at most 63 (CheckRecordDriver), device a DNS label, rdma_dev and
// ifname 1..15 characters of [A-Za-z0-9_.-], network and container ID 1..256 printable
// characters, 1..8 ports in 1..255, at most kMaxAttachmentIps addresses each a canonical CIDR
// ("10.0.0.5/24", "fd00::5/64"), hardware address at most 128 characters of [0-9a-fA-F:.-], a
// GID of 8 groups of 4 hex digits, a GID index below 65536, at most kMaxAttachmentQosSettings
// QoS names of [A-Za-z0-9] (1..32). kInvalidArgument naming the first field that is not.
Status CheckAttachmentFacts(const AttachmentFacts& facts);

// `address` ("10.0.0.5/24") when it is an address in CIDR form as the API server's
// IsValidInterfaceAddress accepts it (canonical: "fd00::5/64", not "FD00:0::5/64"); else nullopt.
std::optional<std::string> CanonicalInterfaceAddress(const std::string& address);

// The JSON document (version 1) and back; FromJson's errors name the $.path; both check.
std::string AttachmentFactsToJson(const AttachmentFacts& facts);
StatusOr<AttachmentFacts> AttachmentFactsFromJson(std::string_view text);

// The writer (the CNI): checks, makes the private directories, replaces the file atomically.
Status WriteAttachmentFacts(const std::string& pod_devices_dir, const AttachmentFacts& facts);
// The CNI at DEL/GC: removes every file of this attachment (under any claim) and the claim
// directories left empty. Nothing there is success (DEL may run twice).
Status RemoveAttachmentFacts(const std::string& pod_devices_dir, const std::string& network,
                             const std::string& container_id, const std::string& ifname);
// The reader (the DRA driver): the facts of `driver`'s devices of the claim, by file name. None
// (no directory) is an empty list; an untrusted directory or file, a file too large, one that
// does not parse or check, or more than kMaxAttachmentFactsFiles files is an error naming it.
// A file whose contents name another claim, driver or device than its name is refused too.
StatusOr<std::vector<AttachmentFacts>> ReadAttachmentFacts(const std::string& pod_devices_dir,
                                                           const std::string& claim_uid,
                                                           const std::string& driver);
// The DRA driver at unprepare: the claim's directory and everything in it. Missing is success.
Status RemoveClaimAttachmentFacts(const std::string& pod_devices_dir, const std::string& claim_uid);

}  // namespace rdmak8s
