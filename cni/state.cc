#include "cni/state.h"

#include "rdmak8s/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
  j["knobs"] = knobs;
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
    r.knobs = j.value("knobs", std::map<std::string, std::string>{});
    return r;
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("attachment record: ") + e.what());
  }
}

StateStore::Lock::~Lock() {
  if (fd_ >= 0) close(fd_);  // closing the description releases the flock
}

namespace {

Status MkdirP(const std::string& path) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoError(errno, "mkdir " + cur);
  }
  return Status::Ok();
}

StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "read " + path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      return ErrnoError(e, "read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace

StatusOr<StateStore::Lock> StateStore::Acquire() {
  RDMAK8S_RETURN_IF_ERROR_CTX(MkdirP(dir_), "state dir");
  const std::string path = dir_ + "/lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  while (flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(fd);
    return ErrnoError(e, "flock " + path);
  }
  return Lock(fd);
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
  RDMAK8S_RETURN_IF_ERROR(MkdirP(dir_ + "/attachments/" + rec.network));
  return WriteFileAtomic(path, rec.ToJson().dump(2) + "\n", 0600)
      .Prepend("save attachment " + rec.Key());
}

StatusOr<AttachmentRecord> StateStore::Load(const std::string& network,
                                            const std::string& container_id,
                                            const std::string& ifname) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string path, RecordPath(network, container_id, ifname));
  RDMAK8S_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded()) return InternalError("parse " + path + ": not valid JSON");
  auto rec = AttachmentRecord::FromJson(j);
  if (!rec.ok()) return rec.status().Prepend("parse " + path);
  return rec;
}

Status StateStore::Remove(const std::string& network, const std::string& container_id,
                          const std::string& ifname) {
  RDMAK8S_ASSIGN_OR_RETURN(std::string path, RecordPath(network, container_id, ifname));
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "remove " + path);
  return Status::Ok();
}

StatusOr<std::vector<AttachmentRecord>> StateStore::List(const std::string& network) {
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
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) continue;
      return ErrnoError(errno, "list " + dir);
    }
    std::vector<std::string> files;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) files.push_back(n);
    }
    closedir(d);
    for (const auto& f : files) {
      const std::string path = dir + "/" + f;
      auto data = ReadFile(path);
      if (!data.ok()) {
        if (data.status().code() == StatusCode::kNotFound) continue;
        return data.status();
      }
      json j = json::parse(*data, nullptr, false);
      if (j.is_discarded()) return InternalError("parse " + path + ": not valid JSON");
      auto rec = AttachmentRecord::FromJson(j);
      if (!rec.ok()) return rec.status().Prepend("parse " + path);
      out.push_back(std::move(*rec));
    }
  }
  return out;
}

StatusOr<std::map<std::string, std::string>> StateStore::LoadKnobs() {
  const std::string path = dir_ + "/knobs.json";
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) return std::map<std::string, std::string>{};
    return data.status();
  }
  json j = json::parse(*data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InternalError("parse " + path + ": not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) return InternalError("parse " + path + ": knob " + k + " is not a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

Status StateStore::SaveKnobs(const std::map<std::string, std::string>& knobs) {
  RDMAK8S_RETURN_IF_ERROR(MkdirP(dir_));
  return WriteFileAtomic(dir_ + "/knobs.json", json(knobs).dump(2) + "\n", 0600)
      .Prepend("save knobs");
}

}  // namespace rdmak8s::cni
