#include "rdmak8s/records/pod_devices.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/strings.h"

namespace rdmak8s {

namespace {

using nlohmann::json;

constexpr int kVersion = 1;
constexpr size_t kMaxRecordBytes = 1 << 20;
constexpr char kSuffix[] = ".json";

json ToJson(const PodClaimRecord& r) {
  json devices = json::array();
  for (const auto& d : r.devices) {
    devices.push_back({{"request", d.request},
                       {"driver", d.driver},
                       {"pool", d.pool},
                       {"device", d.device},
                       {"rdmaDev", d.rdma_dev},
                       {"busId", d.bus_id}});
  }
  return {{"version", kVersion},
          {"claim", {{"namespace", r.claim_namespace}, {"name", r.claim_name}, {"uid", r.claim_uid}}},
          {"devices", devices}};
}

// The record is read with the one strict reader (rdmak8s/base/json_reader.h): errors name the
// $.path.
StatusOr<std::string> StringAt(const json& obj, const char* key, const std::string& path) {
  return json_reader::StringAt(obj, path, key, /*required=*/true);
}

StatusOr<PodClaimRecord> FromJson(std::string_view text) {
  RDMAK8S_ASSIGN_OR_RETURN(json j, json_reader::Parse(text, "$"));
  if (!j.is_object()) return InvalidArgumentError("$: not a JSON object");
  if (!j.contains("version") || j["version"] != kVersion) {
    return InvalidArgumentError("$.version: must be " + std::to_string(kVersion));
  }
  PodClaimRecord r;
  if (!j.contains("claim")) return InvalidArgumentError("$.claim: is required");
  RDMAK8S_ASSIGN_OR_RETURN(r.claim_namespace, StringAt(j["claim"], "namespace", "$.claim"));
  RDMAK8S_ASSIGN_OR_RETURN(r.claim_name, StringAt(j["claim"], "name", "$.claim"));
  RDMAK8S_ASSIGN_OR_RETURN(r.claim_uid, StringAt(j["claim"], "uid", "$.claim"));
  RDMAK8S_ASSIGN_OR_RETURN(const json* devices, json_reader::ArrayAt(j, "$", "devices"));
  if (devices == nullptr) return InvalidArgumentError("$.devices: missing");
  for (size_t i = 0; i < devices->size(); ++i) {
    const json& d = (*devices)[i];
    std::string p = json_reader::Index("$.devices", i);
    PodClaimDevice out;
    RDMAK8S_ASSIGN_OR_RETURN(out.request, StringAt(d, "request", p));
    RDMAK8S_ASSIGN_OR_RETURN(out.driver, StringAt(d, "driver", p));
    RDMAK8S_ASSIGN_OR_RETURN(out.pool, StringAt(d, "pool", p));
    RDMAK8S_ASSIGN_OR_RETURN(out.device, StringAt(d, "device", p));
    RDMAK8S_ASSIGN_OR_RETURN(out.rdma_dev, StringAt(d, "rdmaDev", p));
    RDMAK8S_ASSIGN_OR_RETURN(out.bus_id, StringAt(d, "busId", p));
    r.devices.push_back(std::move(out));
  }
  return r;
}

StatusOr<PodClaimRecord> ReadRecord(const std::string& path) {
  // The one safe reader: no link, no FIFO (which would block the CNI's ADD), nothing too large,
  // and an owner and mode only the writer could have given it.
  bool untrusted = false;  // CheckTrusted's own error already names the path
  StatusOr<std::string> text = ReadRegularFile(
      path, kMaxRecordBytes, FileLinks::kRefuse, [&](const struct stat& st) {
        Status trusted = CheckOwnedByUs(path, st, /*want_dir=*/false);
        untrusted = !trusted.ok();
        return trusted;
      });
  if (!text.ok()) return untrusted ? text.status() : text.status().Prepend("pod record " + path);
  StatusOr<PodClaimRecord> r = FromJson(*text);
  if (!r.ok()) return r.status().Prepend("pod record " + path);
  return r;
}

}  // namespace

Status CheckRecordUid(const std::string& what, const std::string& uid) {
  bool ok = !uid.empty() && uid.size() <= 128;
  for (char c : uid) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-');
  }
  if (!ok) return InvalidArgumentError(what + " " + Quoted(uid) + " is not a plain name ([A-Za-z0-9-])");
  return Status::Ok();
}

Status CheckRecordDriver(const std::string& driver) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  bool ok = !driver.empty() && driver.size() <= 63;
  for (size_t begin = 0; ok && begin <= driver.size();) {
    size_t dot = driver.find('.', begin);
    if (dot == std::string::npos) dot = driver.size();
    const std::string_view label(driver.data() + begin, dot - begin);
    ok = !label.empty() && alnum(label.front()) && alnum(label.back()) &&
         std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; });
    begin = dot + 1;
  }
  if (!ok) {
    return InvalidArgumentError("driver name " + Quoted(driver) +
                                " is not a DNS subdomain of at most 63 characters");
  }
  return Status::Ok();
}

namespace {

// The claim's record as a driver of before issue 23 wrote it (<claim_uid>.json) goes when it
// names no device of another driver: it was ours, or a record of nobody's devices.
Status RemoveOldLayoutRecord(const std::string& pod_dir, const std::string& driver,
                             const std::string& claim_uid) {
  const std::string path = pod_dir + "/" + claim_uid + kSuffix;
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError(errno, "stat old-layout pod record " + path);
  }
  StatusOr<PodClaimRecord> old = ReadRecord(path);
  if (old.ok() && std::any_of(old->devices.begin(), old->devices.end(),
                              [&](const PodClaimDevice& d) { return d.driver != driver; })) {
    return Status::Ok();  // another driver's record: its own unprepare removes it
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(errno, "remove old-layout pod record " + path);
  }
  return Status::Ok();
}

std::string RecordPath(const std::string& pod_dir, const std::string& driver,
                       const std::string& claim_uid) {
  return pod_dir + "/" + claim_uid + "." + driver + kSuffix;
}

}  // namespace

Status WritePodClaimRecord(const std::string& dir, const std::string& pod_uid,
                           const std::string& driver, const PodClaimRecord& record) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("pod UID", pod_uid));
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("claim UID", record.claim_uid));
  RDMAK8S_RETURN_IF_ERROR(CheckRecordDriver(driver));
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir), "pod records dir");
  std::string pod_dir = dir + "/" + pod_uid;
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(pod_dir), "pod records dir");
  RDMAK8S_RETURN_IF_ERROR(WriteFileAtomic(RecordPath(pod_dir, driver, record.claim_uid),
                                          ToJson(record).dump(2) + "\n", 0600)
                              .Prepend("write pod record"));
  return RemoveOldLayoutRecord(pod_dir, driver, record.claim_uid);
}

Status RemovePodClaimRecord(const std::string& dir, const std::string& pod_uid,
                            const std::string& driver, const std::string& claim_uid) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("pod UID", pod_uid));
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("claim UID", claim_uid));
  RDMAK8S_RETURN_IF_ERROR(CheckRecordDriver(driver));
  std::string pod_dir = dir + "/" + pod_uid;
  std::string path = RecordPath(pod_dir, driver, claim_uid);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "remove " + path);
  RDMAK8S_RETURN_IF_ERROR(RemoveOldLayoutRecord(pod_dir, driver, claim_uid));
  // Only an empty directory goes; another claim's record keeps it.
  if (::rmdir(pod_dir.c_str()) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST) {
    return ErrnoError(errno, "remove " + pod_dir);
  }
  return Status::Ok();
}

StatusOr<std::vector<PodClaimRecord>> ReadPodClaimRecords(const std::string& dir,
                                                          const std::string& pod_uid) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("pod UID", pod_uid));
  Status root = CheckOwnedDir(dir);
  if (root.code() == StatusCode::kNotFound) {
    return NotFoundError("no DRA device records for pod " + pod_uid + " (" + dir + " missing)");
  }
  RDMAK8S_RETURN_IF_ERROR(root);
  std::string pod_dir = dir + "/" + pod_uid;
  Status pod = CheckOwnedDir(pod_dir);
  if (pod.code() == StatusCode::kNotFound) {
    return NotFoundError("no DRA device records for pod " + pod_uid);
  }
  RDMAK8S_RETURN_IF_ERROR(pod);
  DIR* d = ::opendir(pod_dir.c_str());
  if (d == nullptr) return ErrnoError(errno, "open " + pod_dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() <= sizeof(kSuffix) - 1 ||
        name.compare(name.size() - (sizeof(kSuffix) - 1), std::string::npos, kSuffix) != 0) {
      continue;  // ".", "..", WriteFileAtomic's temporaries
    }
    names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<PodClaimRecord> out;
  for (const auto& name : names) {
    RDMAK8S_ASSIGN_OR_RETURN(PodClaimRecord r, ReadRecord(pod_dir + "/" + name));
    out.push_back(std::move(r));
  }
  if (out.empty()) return NotFoundError("no DRA device records for pod " + pod_uid);
  return out;
}

}  // namespace rdmak8s
