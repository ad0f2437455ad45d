#include "rdmak8s/records/attachment_facts.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/numbers.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/records/pod_devices.h"

namespace rdmak8s {

namespace {

using nlohmann::json;

constexpr int kVersion = 1;
constexpr char kDirName[] = ".attachments";
constexpr char kSuffix[] = ".json";

bool AllOf(const std::string& s, size_t min, size_t max, bool (*ok)(char)) {
  return s.size() >= min && s.size() <= max && std::all_of(s.begin(), s.end(), ok);
}
bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}
bool Printable(char c) { return c > ' ' && c < 0x7f; }
bool MacChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.' || c == '-';
}
bool Alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool IsDnsLabel(const std::string& s) {
  auto lower = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return !s.empty() && s.size() <= 63 && lower(s.front()) && lower(s.back()) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return lower(c) || c == '-'; });
}

bool IsGid(const std::string& s) {
  if (s.size() != 39) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool colon = i % 5 == 4;
    if (colon ? s[i] != ':' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::string FilePath(const std::string& dir, const AttachmentFacts& f) {
  return dir + "/" + kDirName + "/" + f.claim_uid + "/" + f.driver + "." + f.device + "." +
         AttachmentKey(f.network, f.container_id, f.ifname) + kSuffix;
}

// Entries of `dir` ending in `suffix` (".", "..", WriteFileAtomic's temporaries never do).
StatusOr<std::vector<std::string>> Names(const std::string& dir, const std::string& suffix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(errno, "open " + dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      names.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::string AttachmentKey(const std::string& network, const std::string& container_id,
                          const std::string& ifname) {
  // FNV-1a 64 of the three, NUL-separated: a name, not a secret (the directory is root's).
  uint64_t h = 14695981039346656037ull;
  for (const std::string* part : {&network, &container_id, &ifname}) {
    for (unsigned char c : *part) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0) * 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::optional<std::string> CanonicalInterfaceAddress(const std::string& address) {
  const size_t slash = address.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const std::string ip = address.substr(0, slash);
  unsigned char bytes[16];
  int family = ip.find(':') == std::string::npos ? AF_INET : AF_INET6;
  if (::inet_pton(family, ip.c_str(), bytes) != 1) return std::nullopt;
  StatusOr<uint64_t> prefix = ParseUnsignedInRange(address.substr(slash + 1), "prefix", 0,
                                                   family == AF_INET ? 32 : 128);
  if (!prefix.ok() || address.substr(slash + 1) != std::to_string(*prefix)) return std::nullopt;
  char text[INET6_ADDRSTRLEN];
  if (::inet_ntop(family, bytes, text, sizeof(text)) == nullptr) return std::nullopt;
  const std::string canonical = std::string(text) + "/" + std::to_string(*prefix);
  if (canonical != address) return std::nullopt;
  return canonical;
}

Status CheckAttachmentFacts(const AttachmentFacts& f) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("claimUid", f.claim_uid));
  RDMAK8S_RETURN_IF_ERROR(CheckRecordDriver(f.driver));
  auto bad = [](const char* field, const std::string& value, const char* want) {
    return InvalidArgumentError(std::string(field) + " " + Quoted(value, 64) + ": " + want);
  };
  if (!IsDnsLabel(f.device)) return bad("device", f.device, "not a DNS label");
  if (!AllOf(f.rdma_dev, 1, 15, NameChar)) return bad("rdmaDev", f.rdma_dev, "not a device name");
  if (!AllOf(f.ifname, 1, 15, NameChar)) return bad("ifname", f.ifname, "not an interface name");
  if (!AllOf(f.network, 1, 256, Printable)) return bad("network", f.network, "not 1..256 printable characters");
  if (!AllOf(f.container_id, 1, 256, Printable)) {
    return bad("containerId", f.container_id, "not 1..256 printable characters");
  }
  if (f.ports.empty() || f.ports.size() > 8) return InvalidArgumentError("ports: 1 to 8 wanted");
  for (uint32_t p : f.ports) {
    if (p < 1 || p > 255) return InvalidArgumentError("ports: " + std::to_string(p) + " is not in 1..255");
  }
  if (f.ips.size() > kMaxAttachmentIps) {
    return InvalidArgumentError("ips: " + std::to_string(f.ips.size()) + " addresses, at most " +
                                std::to_string(kMaxAttachmentIps));
  }
  for (const auto& ip : f.ips) {
    if (!CanonicalInterfaceAddress(ip)) return bad("ips", ip, "not an address in canonical CIDR form");
  }
  if (!AllOf(f.hardware_address, 0, 128, MacChar)) {
    return bad("hardwareAddress", f.hardware_address, "not a hardware address");
  }
  if (!f.gid.empty() && !IsGid(f.gid)) return bad("gid", f.gid, "not a GID (8 groups of 4 hex digits)");
  if (f.gid_index && *f.gid_index > 65535) return InvalidArgumentError("gidIndex: above 65535");
  if (f.qos.size() > kMaxAttachmentQosSettings) return InvalidArgumentError("qos: too many settings");
  for (const auto& q : f.qos) {
    if (!AllOf(q, 1, 32, Alnum)) return bad("qos", q, "not a setting name");
  }
  return Status::Ok();
}

std::string AttachmentFactsToJson(const AttachmentFacts& f) {
  json j = {{"version", kVersion},     {"claimUid", f.claim_uid},   {"driver", f.driver},
            {"device", f.device},      {"rdmaDev", f.rdma_dev},     {"network", f.network},
            {"containerId", f.container_id}, {"ifname", f.ifname},  {"ports", f.ports},
            {"ips", f.ips},            {"hardwareAddress", f.hardware_address},
            {"gid", f.gid},            {"qos", f.qos}};
  if (f.gid_index) j["gidIndex"] = *f.gid_index;
  if (f.pkey) j["pkey"] = *f.pkey;
  return j.dump() + "\n";
}

StatusOr<AttachmentFacts> AttachmentFactsFromJson(std::string_view text) {
  if (text.size() > kMaxAttachmentFactsBytes) {
    return InvalidArgumentError("larger than " + std::to_string(kMaxAttachmentFactsBytes) + " bytes");
  }
  RDMAK8S_ASSIGN_OR_RETURN(json j, json_reader::Parse(text, "$"));
  RDMAK8S_RETURN_IF_ERROR(json_reader::RequireObject(j, "$"));
  RDMAK8S_RETURN_IF_ERROR(json_reader::CheckKeys(
      j, "$", {"version", "claimUid", "driver", "device", "rdmaDev", "network", "containerId",
               "ifname", "ports", "ips", "hardwareAddress", "gid", "gidIndex", "pkey", "qos"}));
  RDMAK8S_ASSIGN_OR_RETURN(int64_t version, json_reader::IntAt(j, "$", "version", 0));
  if (version != kVersion) return json_reader::Invalid("$.version", "must be " + std::to_string(kVersion));
  AttachmentFacts f;
  auto str = [&](const char* key, std::string& out, bool required) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(out, json_reader::StringAt(j, "$", key, required));
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(str("claimUid", f.claim_uid, true));
  RDMAK8S_RETURN_IF_ERROR(str("driver", f.driver, true));
  RDMAK8S_RETURN_IF_ERROR(str("device", f.device, true));
  RDMAK8S_RETURN_IF_ERROR(str("rdmaDev", f.rdma_dev, true));
  RDMAK8S_RETURN_IF_ERROR(str("network", f.network, true));
  RDMAK8S_RETURN_IF_ERROR(str("containerId", f.container_id, true));
  RDMAK8S_RETURN_IF_ERROR(str("ifname", f.ifname, true));
  RDMAK8S_RETURN_IF_ERROR(str("hardwareAddress", f.hardware_address, false));
  RDMAK8S_RETURN_IF_ERROR(str("gid", f.gid, false));
  auto strings = [&](const char* key, std::vector<std::string>& out) -> Status {
    if (!j.contains(key) || j[key].is_null()) return Status::Ok();
    RDMAK8S_ASSIGN_OR_RETURN(out, json_reader::StringList(j[key], json_reader::Field("$", key)));
    return Status::Ok();
  };
  RDMAK8S_RETURN_IF_ERROR(strings("ips", f.ips));
  RDMAK8S_RETURN_IF_ERROR(strings("qos", f.qos));
  RDMAK8S_ASSIGN_OR_RETURN(const json* ports, json_reader::ArrayAt(j, "$", "ports"));
  for (size_t i = 0; ports != nullptr && i < ports->size(); ++i) {
    if (!(*ports)[i].is_number_unsigned() || (*ports)[i].get<uint64_t>() > 255) {
      return json_reader::Invalid(json_reader::Index("$.ports", i), "not a port number");
    }
    f.ports.push_back((*ports)[i].get<uint32_t>());
  }
  for (const char* key : {"gidIndex", "pkey"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    if (!j[key].is_number_unsigned() || j[key].get<uint64_t>() > 65535) {
      return json_reader::Invalid(json_reader::Field("$", key), "not a number in 0..65535");
    }
    if (std::string_view(key) == "gidIndex") f.gid_index = j[key].get<uint32_t>();
    else f.pkey = j[key].get<uint16_t>();
  }
  RDMAK8S_RETURN_IF_ERROR(CheckAttachmentFacts(f));
  return f;
}

Status WriteAttachmentFacts(const std::string& dir, const AttachmentFacts& f) {
  RDMAK8S_RETURN_IF_ERROR_CTX(CheckAttachmentFacts(f), "attachment facts");
  const std::string text = AttachmentFactsToJson(f);
  if (text.size() > kMaxAttachmentFactsBytes) {
    return InvalidArgumentError("attachment facts: " + std::to_string(text.size()) + " bytes, at most " +
                                std::to_string(kMaxAttachmentFactsBytes));
  }
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir), "pod records dir");
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir + "/" + kDirName), "attachment facts dir");
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir + "/" + kDirName + "/" + f.claim_uid),
                              "attachment facts dir");
  return WriteFileAtomic(FilePath(dir, f), text, 0600).Prepend("write attachment facts");
}

Status RemoveAttachmentFacts(const std::string& dir, const std::string& network,
                             const std::string& container_id, const std::string& ifname) {
  const std::string root = dir + "/" + kDirName;
  Status trusted = CheckOwnedDir(root);
  if (trusted.code() == StatusCode::kNotFound) return Status::Ok();
  if (!trusted.ok()) return trusted.Prepend("remove attachment facts");
  const std::string suffix = "." + AttachmentKey(network, container_id, ifname) + kSuffix;
  DIR* d = ::opendir(root.c_str());
  if (d == nullptr) return ErrnoError(errno, "open " + root);
  std::vector<std::string> claims;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (CheckRecordUid("claim UID", name).ok()) claims.push_back(name);
  }
  ::closedir(d);
  for (const auto& claim : claims) {
    const std::string claim_dir = root + "/" + claim;
    if (!CheckOwnedDir(claim_dir).ok()) continue;  // not the writer's: nothing of ours is in it
    StatusOr<std::vector<std::string>> names = Names(claim_dir, suffix);
    if (!names.ok()) return names.status().Prepend("remove attachment facts");
    for (const auto& name : *names) {
      const std::string path = claim_dir + "/" + name;
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "remove " + path);
    }
    // Only an empty directory goes: another attachment's facts keep it.
    if (!names->empty() && ::rmdir(claim_dir.c_str()) != 0 && errno != ENOENT &&
        errno != ENOTEMPTY && errno != EEXIST) {
      return ErrnoError(errno, "remove " + claim_dir);
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<AttachmentFacts>> ReadAttachmentFacts(const std::string& dir,
                                                           const std::string& claim_uid,
                                                           const std::string& driver) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("claim UID", claim_uid));
  RDMAK8S_RETURN_IF_ERROR(CheckRecordDriver(driver));
  std::vector<AttachmentFacts> out;
  const std::string root = dir + "/" + kDirName;
  const std::string claim_dir = root + "/" + claim_uid;
  for (const std::string* d : {&dir, &root, &claim_dir}) {
    Status trusted = CheckOwnedDir(*d);
    if (trusted.code() == StatusCode::kNotFound) return out;
    if (!trusted.ok()) return trusted.Prepend("attachment facts");
  }
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names, Names(claim_dir, kSuffix));
  // <driver>.<device>.<attachment>.json: the device (a DNS label) and the attachment (hex) have
  // no '.', so the driver is what precedes the last two ('.'s of its own included).
  std::vector<std::string> ours;
  for (auto& n : names) {
    const std::string stem = n.substr(0, n.size() - (sizeof(kSuffix) - 1));
    const size_t key_dot = stem.rfind('.');
    const size_t device_dot = key_dot == std::string::npos || key_dot == 0 ? std::string::npos
                                                                           : stem.rfind('.', key_dot - 1);
    if (device_dot != std::string::npos && stem.compare(0, device_dot, driver) == 0 && device_dot == driver.size()) {
      ours.push_back(std::move(n));
    }
  }
  if (ours.size() > kMaxAttachmentFactsFiles) {
    return FailedPreconditionError("attachment facts " + claim_dir + ": " + std::to_string(ours.size()) +
                                   " files of driver " + driver + ", at most " +
                                   std::to_string(kMaxAttachmentFactsFiles));
  }
  for (const auto& name : ours) {
    const std::string path = claim_dir + "/" + name;
    bool untrusted = false;
    StatusOr<std::string> text = ReadRegularFile(
        path, kMaxAttachmentFactsBytes, FileLinks::kRefuse, [&](const struct stat& st) {
          Status s = CheckOwnedByUs(path, st, /*want_dir=*/false);
          untrusted = !s.ok();
          return s;
        });
    if (!text.ok()) {
      if (text.status().code() == StatusCode::kNotFound) continue;  // a DEL removed it meanwhile
      return untrusted ? text.status() : text.status().Prepend("attachment facts " + path);
    }
    StatusOr<AttachmentFacts> f = AttachmentFactsFromJson(*text);
    if (!f.ok()) return f.status().Prepend("attachment facts " + path);
    if (f->claim_uid != claim_uid || path != FilePath(dir, *f)) {
      return FailedPreconditionError("attachment facts " + path +
                                     ": its contents name another claim, driver, device or attachment");
    }
    out.push_back(*std::move(f));
  }
  return out;
}

Status RemoveClaimAttachmentFacts(const std::string& dir, const std::string& claim_uid) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("claim UID", claim_uid));
  const std::string claim_dir = dir + "/" + kDirName + "/" + claim_uid;
  Status trusted = CheckOwnedDir(claim_dir);
  if (trusted.code() == StatusCode::kNotFound) return Status::Ok();
  if (!trusted.ok()) return trusted.Prepend("remove attachment facts");
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names, Names(claim_dir, ""));
  for (const auto& name : names) {
    if (name == "." || name == "..") continue;
    const std::string path = claim_dir + "/" + name;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "remove " + path);
  }
  if (::rmdir(claim_dir.c_str()) != 0 && errno != ENOENT && errno != ENOTEMPTY) {
    return ErrnoError(errno, "remove " + claim_dir);
  }
  return Status::Ok();
}

}  // namespace rdmak8s
