#include "cni/state.h"

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <exception>

#include "cni/spec.h"

namespace rdmak8s::cni {

using nlohmann::json;

json AttachmentRecord::ToJson() const {
  json j;
  j["network"] = network;
  j["containerID"] = container_id;
  j["ifname"] = ifname;
  j["netns"] = netns;
  j["cniVersion"] = cni_version;
  j["rdmaDev"] = rdma_dev;
  j["transport"] = transport;
  j["netnsMode"] = netns_mode;
  j["moved"] = moved;
  j["ports"] = ports;
  j["pfNetdev"] = pf_netdev;
  j["knobs"] = qos_settings;
  return j;
}

StatusOr<AttachmentRecord> AttachmentRecord::FromJson(const json& j) {
  try {
    AttachmentRecord r;
    r.network = j.at("network").get<std::string>();
    r.container_id = j.at("containerID").get<std::string>();
    r.ifname = j.at("ifname").get<std::string>();
    r.netns = j.value("netns", "");
    r.cni_version = j.value("cniVersion", "");
    r.rdma_dev = j.at("rdmaDev").get<std::string>();
    r.transport = j.value("transport", "unknown");
    r.netns_mode = j.value("netnsMode", "");
    r.moved = j.value("moved", false);
    r.ports = j.value("ports", std::vector<uint32_t>{});
    r.pf_netdev = j.value("pfNetdev", "");
    r.qos_settings = j.value("knobs", std::map<std::string, std::string>{});
    return r;
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("attachment record: ") + e.what());
  }
}

StateStore::Lock::~Lock() {
  if (store_ != nullptr) {  // others may write once the flock is gone: forget what was listed
    store_->locked_ = false;
    store_->listed_.reset();
  }
  if (fd_ >= 0) close(fd_);  // closing the description releases the flock
}

namespace {

// A record or knobs.json holds one attachment's or one node's few knobs: far below this.
constexpr size_t kMaxStateFileBytes = size_t{1} << 20;

// A regular file of ours, through the one safe reader (state files are never links, and a FIFO
// planted in the state dir must not block an ADD). Anything that cannot be a file we wrote (a
// symlink, a FIFO, a directory, a file too large) is kFailedPrecondition, which the callers
// quarantine; missing stays kNotFound.
StatusOr<std::string> ReadFile(const std::string& path) {
  auto out = ReadRegularFile(path, kMaxStateFileBytes);
  if (out.ok()) return out;
  if (out.status().code() == StatusCode::kInvalidArgument) {
    return FailedPreconditionError("read " + path + ": " + out.status().message());
  }
  return out.status().Prepend("read " + path);
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StatusOr<StateStore::Lock> StateStore::Acquire() {
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir_), "state dir");
  const std::string path = dir_ + "/lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  while (flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(fd);
    return ErrnoError(e, "flock " + path);
  }
  locked_ = true;
  listed_.reset();
  return Lock(fd, this);
}

StatusOr<std::string> StateStore::RecordPath(const std::string& network,
                                             const std::string& container_id,
                                             const std::string& ifname) const {
  if (!ValidNetworkName(network)) return InvalidArgumentError("invalid network name \"" + network + "\"");
  if (!ValidContainerId(container_id)) {
    return InvalidArgumentError("invalid container ID \"" + container_id + "\"");
  }
  if (!ValidIfname(ifname)) return InvalidArgumentError("invalid interface name \"" + ifname + "\"");
  return dir_ + "/attachments/" + network + "/" + container_id + ":" + ifname + ".json";
}

Status StateStore::Save(const AttachmentRecord& rec) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string path, RecordPath(rec.network, rec.container_id, rec.ifname));
  listed_.reset();
  for (const std::string& d : {dir_, dir_ + "/attachments", dir_ + "/attachments/" + rec.network}) {
    RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(d), "save attachment " + rec.Key());
  }
  return WriteFileAtomic(path, rec.ToJson().dump(2) + "\n", 0600)
      .Prepend("save attachment " + rec.Key());
}

void StateStore::Quarantine(const std::string& path, const std::string& network,
                            const std::string& file, const std::string& why) {
  listed_.reset();
  const std::string qdir = dir_ + "/quarantine";
  std::string dest = qdir + "/" + (network.empty() ? "" : network + "+") + file + "." +
                     std::to_string(time(nullptr)) + "." + std::to_string(getpid());
  std::string line = "state: " + path + " " + why + ": ";
  Status s = EnsurePrivateDir(qdir);
  if (s.ok() && rename(path.c_str(), dest.c_str()) != 0) s = ErrnoError(errno, "rename to " + dest);
  if (s.ok()) {
    line += "quarantined as " + dest + " (kept for an admin); other attachments go on";
  } else {
    line += "could not be quarantined (" + s.message() + "); skipped, other attachments go on";
  }
  if (report_) report_(line);
}

StatusOr<AttachmentRecord> StateStore::ReadRecord(const std::string& path, const std::string& network,
                                                  const std::string& file) {
  auto data = ReadFile(path);
  std::string why;
  if (data.ok()) {
    StatusOr<json> j = json_reader::Parse(*data, "$");
    if (!j.ok()) {
      why = "is not valid JSON (" + j.status().message() + ")";
    } else {
      auto rec = AttachmentRecord::FromJson(*j);
      if (!rec.ok()) {
        why = "is not an attachment record (" + rec.status().message() + ")";
      } else if (rec->network != network || rec->container_id + ":" + rec->ifname + ".json" != file) {
        why = "holds the record of another attachment (" + rec->Key() + ")";
      } else {
        return rec;
      }
    }
  } else if (data.status().code() == StatusCode::kFailedPrecondition) {
    why = "is not a record file (" + data.status().message() + ")";
  } else {
    return data.status();  // missing (kNotFound), or unreadable: an error, not a verdict
  }
  Quarantine(path, network, file, why);
  return NotFoundError("attachment record " + path + " " + why + ": quarantined");
}

StatusOr<AttachmentRecord> StateStore::Load(const std::string& network,
                                            const std::string& container_id,
                                            const std::string& ifname) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string path, RecordPath(network, container_id, ifname));
  return ReadRecord(path, network, container_id + ":" + ifname + ".json");
}

Status StateStore::Remove(const std::string& network, const std::string& container_id,
                          const std::string& ifname) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string path, RecordPath(network, container_id, ifname));
  listed_.reset();
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "remove " + path);
  return Status::Ok();
}

StatusOr<std::vector<AttachmentRecord>> StateStore::List(const std::string& network) {
  if (listed_) {
    if (network.empty()) return *listed_;
    std::vector<AttachmentRecord> of_network;
    for (const auto& r : *listed_) {
      if (r.network == network) of_network.push_back(r);
    }
    return of_network;
  }
  std::vector<AttachmentRecord> out;
  std::vector<std::string> networks;
  const std::string base = dir_ + "/attachments";
  if (!network.empty()) {
    networks.push_back(network);
  } else {
    DIR* d = opendir(base.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return out;
      return ErrnoError(errno, "list " + base);
    }
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") networks.push_back(n);
    }
    closedir(d);
  }
  for (const auto& net : networks) {
    const std::string dir = base + "/" + net;
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;
      return ErrnoError(errno, "list " + dir);
    }
    if (!S_ISDIR(st.st_mode) || !ValidNetworkName(net)) {
      Quarantine(dir, "", net, S_ISLNK(st.st_mode)     ? "is a symlink, not a network directory"
                               : !S_ISDIR(st.st_mode) ? "is not a network directory"
                                                      : "is not named like a network");
      continue;
    }
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) continue;
      return ErrnoError(errno, "list " + dir);
    }
    std::vector<std::string> files;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (EndsWith(n, ".json")) files.push_back(n);
    }
    closedir(d);
    for (const auto& f : files) {
      auto rec = ReadRecord(dir + "/" + f, net, f);
      if (rec.ok()) {
        out.push_back(std::move(*rec));
      } else if (rec.status().code() != StatusCode::kNotFound) {
        return rec.status();
      }
    }
  }
  if (locked_ && network.empty()) listed_ = out;
  return out;
}

StatusOr<std::map<std::string, QosOriginal>> StateStore::LoadQosOriginals() {
  const std::string path = dir_ + "/knobs.json";
  std::map<std::string, QosOriginal> out;
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) return out;
    if (data.status().code() != StatusCode::kFailedPrecondition) return data.status();
  }
  std::string why;
  if (data.ok()) {
    StatusOr<json> parsed = json_reader::Parse(*data, "$");
    json j = parsed.ok() ? std::move(*parsed) : json();
    if (!j.is_object()) {
      why = parsed.ok() ? "is not a JSON object" : "is not a JSON object (" + parsed.status().message() + ")";
      j = json::object();
    }
    for (const auto& [k, v] : j.items()) {
      if (v.is_string()) {  // an older release: id -> original
        out[k] = QosOriginal{v.get<std::string>(), "", ""};
      } else if (v.is_object() && v.contains("original") && v["original"].is_string() &&
                 v.value("applied", json("")).is_string() && v.value("leftAs", json("")).is_string()) {
        out[k] = QosOriginal{v["original"].get<std::string>(), v.value("applied", ""), v.value("leftAs", "")};
      } else {
        why = "has knob " + k + " in no form we wrote";
        break;
      }
    }
  } else {
    why = "is not a regular file (" + data.status().message() + ")";
  }
  if (why.empty()) return out;
  Quarantine(path, "", "knobs.json",
             why + "; the originals it held are NOT restored automatically any more (restore them "
                   "by hand from the quarantined copy)");
  return std::map<std::string, QosOriginal>{};
}

Status StateStore::SaveQosOriginals(const std::map<std::string, QosOriginal>& knobs) {
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir_), "save knobs");
  json j = json::object();
  for (const auto& [id, k] : knobs) {
    json e = {{"original", k.original}, {"applied", k.applied}};
    if (!k.left_as.empty()) e["leftAs"] = k.left_as;
    j[id] = e;
  }
  return WriteFileAtomic(dir_ + "/knobs.json", j.dump(2) + "\n", 0600).Prepend("save knobs");
}

}  // namespace rdmak8s::cni
