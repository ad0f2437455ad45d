// StateStore: what each attachment did, on disk, so DEL/CHECK/GC can undo or verify it after the
// ADD's process is long gone, and so node-wide QoS knobs can be shared between attachments.
//
// Layout under the state dir (default /var/lib/cni/rdmak8s):
//   lock                                     flock(2)ed for the whole of an ADD/DEL/CHECK/GC
//   attachments/<network>/<containerID>:<ifname>.json   one AttachmentRecord
//   knobs.json                               by setting id, every QoS setting we changed:
//                                            QosOriginal (the name stays knobs.json: a node
//                                            upgraded mid-attachment restores from it)
//   quarantine/<network>+<file>.<time>.<pid>  entries moved aside (see below)
// Names are validated by the spec layer (no '/', no ':' in IDs or ifnames; network names are
// [a-zA-Z0-9][a-zA-Z0-9_.-]*), and checked again here so nothing escapes the dir.
// Writes are atomic (WriteFileAtomic: O_EXCL|O_NOFOLLOW temp file, fsync, rename, fsync of the
// directory). The state dir and its directories are 0700 and must be ours (EnsurePrivateDir): a
// symlinked or foreign-owned one is refused. Files are opened with O_NOFOLLOW.
//
// Quarantine: an entry that can't be a record of ours (not JSON, not a record, a record whose
// network/containerID/ifname are not those of its file name, a link or a directory named like a
// record, a network directory that is a link or a file) would otherwise stop every DEL, ADD and GC
// that lists the node's attachments. It is renamed into quarantine/ (kept for an admin) and
// reported once through `report`; the listing goes on without it. A corrupt knobs.json likewise
// (the originals in it are then lost to automatic restore, and the report says so).
//
// Thread/process safety: hold Lock() across read-modify-write sequences; it serialises every
// rdmak8s process on the node sharing this state dir (and threads of one process, since each
// Lock() opens its own file description).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/status.h"

namespace rdmak8s::cni {

struct AttachmentRecord {
  std::string network;
  std::string container_id;
  std::string ifname;
  std::string netns;
  std::string cni_version;
  std::string rdma_dev;
  std::string transport;     // "roce" | "ib" | "iwarp" | "unknown"
  std::string netns_mode;    // mode the kernel was in at ADD
  bool moved = false;        // exclusive mode: the device was moved into the pod by us
  std::vector<uint32_t> ports;  // ports ADD checked and waited on; empty in older records
  std::string pf_netdev;     // netdev carrying node-wide QoS (DCB, ECN); empty when none
  // QoS settings this attachment requires, by id ("pfc:<pf>:<p>", "tos:<dev>:<port>", ...) ->
  // value (common's rdmak8s/qos/qos_setting.h: the key format, unchanged across releases). Its JSON
  // key stays "knobs": records written by older releases.
  std::map<std::string, std::string> qos_settings;

  nlohmann::json ToJson() const;
  static StatusOr<AttachmentRecord> FromJson(const nlohmann::json& j);
  std::string Key() const { return network + "/" + container_id + ":" + ifname; }
};

// What knobs.json keeps for one QoS setting we changed.
struct QosOriginal {
  std::string original;  // its value before our first change: what restore writes back
  std::string applied;   // the value we set; "" in files of older releases (unknown)
  // Set when a restore found the knob at this value, neither `applied` nor `original`: someone
  // (an admin) changed it since. It is left as they set it, not retried, and kept here so the
  // decision and our original stay visible. The next attachment to change the knob starts over.
  std::string left_as;
};

class StateStore {
 public:
  // `report` gets one line per quarantined entry (null: dropped).
  explicit StateStore(std::string dir, std::function<void(const std::string&)> report = nullptr)
      : dir_(std::move(dir)), report_(std::move(report)) {}
  const std::string& dir() const { return dir_; }

  // An exclusive flock on <dir>/lock, released when the Lock is destroyed. While it is held the
  // records change only through this store, so List() of every network is read from disk once
  // and kept until a Save, Remove or quarantine (a DEL asks twice: the move's next holder, the knobs).
  class Lock {
   public:
    Lock(Lock&& o) noexcept : fd_(o.fd_), store_(o.store_) {
      o.fd_ = -1;
      o.store_ = nullptr;
    }
    Lock& operator=(Lock&&) = delete;
    ~Lock();

   private:
    friend class StateStore;
    Lock(int fd, StateStore* store) : fd_(fd), store_(store) {}
    int fd_;
    StateStore* store_;
  };
  // Creates the dir (0700) when missing; refuses one that is a symlink or not ours.
  StatusOr<Lock> Acquire();

  Status Save(const AttachmentRecord& rec);
  // kNotFound when there is no record, or when the one there was quarantined.
  StatusOr<AttachmentRecord> Load(const std::string& network, const std::string& container_id,
                                  const std::string& ifname);
  // OK when already absent.
  Status Remove(const std::string& network, const std::string& container_id,
                const std::string& ifname);
  // Every record of every network (network empty) or of one. An entry that can't be a record is
  // quarantined, never silently dropped; errors are only for a dir that can't be read.
  StatusOr<std::vector<AttachmentRecord>> List(const std::string& network = "");

  StatusOr<std::map<std::string, QosOriginal>> LoadQosOriginals();
  Status SaveQosOriginals(const std::map<std::string, QosOriginal>& knobs);

 private:
  StatusOr<std::string> RecordPath(const std::string& network, const std::string& container_id,
                                   const std::string& ifname) const;
  // Reads the record at `path` expected to be `key`; kNotFound when absent, or when quarantined.
  StatusOr<AttachmentRecord> ReadRecord(const std::string& path, const std::string& network,
                                        const std::string& file);
  // Renames `path` (network/file of the state dir) into quarantine/ and reports it.
  void Quarantine(const std::string& path, const std::string& network, const std::string& file,
                  const std::string& why);
  std::string dir_;
  std::function<void(const std::string&)> report_;
  bool locked_ = false;  // a Lock of this store is alive
  std::optional<std::vector<AttachmentRecord>> listed_;  // List(""), while locked_ and unchanged
};


}  // namespace rdmak8s::cni
