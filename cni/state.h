// StateStore: what each attachment did, on disk, so DEL/CHECK/GC can undo or verify it after the
// ADD's process is long gone, and so node-wide QoS knobs can be shared between attachments.
//
// Layout under the state dir (default /var/lib/cni/rdmak8s):
//   lock                                     flock(2)ed for the whole of an ADD/DEL/CHECK/GC
//   attachments/<network>/<containerID>:<ifname>.json   one AttachmentRecord
//   knobs.json                               original value of every knob we changed, by knob id
// Names are validated by the spec layer (no '/', no ':' in IDs or ifnames; network names are
// [a-zA-Z0-9][a-zA-Z0-9_.-]*), and checked again here so nothing escapes the dir.
// Writes are atomic: temp file, fsync, rename, fsync of the directory.
//
// Thread/process safety: hold Lock() across read-modify-write sequences; it serialises every
// rdmak8s process on the node sharing this state dir (and threads of one process, since each
// Lock() opens its own file description).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmak8s/status.h"

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
  // Knobs this attachment requires, by id ("pfc:<pf>:<p>", "tos:<dev>:<port>", ...) -> value.
  std::map<std::string, std::string> knobs;

  nlohmann::json ToJson() const;
  static StatusOr<AttachmentRecord> FromJson(const nlohmann::json& j);
  std::string Key() const { return network + "/" + container_id + ":" + ifname; }
};

class StateStore {
 public:
  explicit StateStore(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // An exclusive flock on <dir>/lock, released when the Lock is destroyed.
  class Lock {
   public:
    explicit Lock(int fd = -1) : fd_(fd) {}
    Lock(Lock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Lock& operator=(Lock&&) = delete;
    ~Lock();
   private:
    int fd_;
  };
  // Creates the dir when missing.
  StatusOr<Lock> Acquire();

  Status Save(const AttachmentRecord& rec);
  // kNotFound when there is no record.
  StatusOr<AttachmentRecord> Load(const std::string& network, const std::string& container_id,
                                  const std::string& ifname);
  // OK when already absent.
  Status Remove(const std::string& network, const std::string& container_id,
                const std::string& ifname);
  // Every record of every network (network empty) or of one. A record that can't be parsed is an
  // error naming its file: never silently dropped.
  StatusOr<std::vector<AttachmentRecord>> List(const std::string& network = "");

  StatusOr<std::map<std::string, std::string>> LoadKnobs();
  Status SaveKnobs(const std::map<std::string, std::string>& knobs);

 private:
  StatusOr<std::string> RecordPath(const std::string& network, const std::string& container_id,
                                   const std::string& ifname) const;
  std::string dir_;
};


}  // namespace rdmak8s::cni
