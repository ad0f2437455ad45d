#include "dra/checkpoint.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/json_reader.h"

namespace rdmak8s::dra {

namespace {

using nlohmann::json;

constexpr int kVersion = 1;
constexpr size_t kMaxCheckpointBytes = 64 << 20;

std::string_view PhaseName(ClaimPhase p) {
  return p == ClaimPhase::kPrepared ? "prepared" : "preparing";
}

Status Bad(const std::string& path, const std::string& what) {
  return InvalidArgumentError(path + ": " + what);
}

// The record is read with the one strict reader (rdmak8s/base/json_reader.h): errors name the
// $.path.
Status GetString(const json& obj, const char* key, const std::string& path, std::string& out) {
  RDMAK8S_ASSIGN_OR_RETURN(out, json_reader::StringAt(obj, path, key, /*required=*/true));
  return Status::Ok();
}

Status GetStrings(const json& obj, const char* key, const std::string& path,
                  std::vector<std::string>& out) {
  RDMAK8S_ASSIGN_OR_RETURN(const json* a, json_reader::ArrayAt(obj, path, key));
  if (a == nullptr) return Status::Ok();
  const std::string at = json_reader::Field(path, key);
  for (size_t i = 0; i < a->size(); ++i) {
    if (!(*a)[i].is_string()) return Bad(json_reader::Index(at, i), "not a string");
    out.push_back((*a)[i].get<std::string>());
  }
  return Status::Ok();
}

StatusOr<PreparedDevice> ParseDevice(const json& j, const std::string& path) {
  RDMAK8S_RETURN_IF_ERROR(json_reader::RequireObject(j, path));
  PreparedDevice d;
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "request", path, d.request));
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "pool", path, d.pool));
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "device", path, d.device));
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "rdmaDev", path, d.rdma_dev));
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "busId", path, d.bus_id));
  RDMAK8S_RETURN_IF_ERROR(GetStrings(j, "cdiDeviceIds", path, d.cdi_device_ids));
  return d;
}

StatusOr<PreparedClaim> ParseClaim(const json& j, const std::string& path) {
  RDMAK8S_RETURN_IF_ERROR(json_reader::RequireObject(j, path));
  PreparedClaim c;
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "uid", path, c.uid));
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "namespace", path, c.namespace_name));
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "name", path, c.name));
  std::string phase;
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "phase", path, phase));
  if (phase == "prepared") {
    c.phase = ClaimPhase::kPrepared;
  } else if (phase == "preparing") {
    c.phase = ClaimPhase::kPreparing;
  } else {
    return Bad(path + ".phase", "must be \"preparing\" or \"prepared\", got \"" + phase + "\"");
  }
  RDMAK8S_RETURN_IF_ERROR(GetString(j, "cdiSpecPath", path, c.cdi_spec_path));
  RDMAK8S_RETURN_IF_ERROR(GetStrings(j, "podUids", path, c.pod_uids));
  RDMAK8S_ASSIGN_OR_RETURN(const json* devices, json_reader::ArrayAt(j, path, "devices"));
  if (devices != nullptr) {
    for (size_t i = 0; i < devices->size(); ++i) {
      RDMAK8S_ASSIGN_OR_RETURN(PreparedDevice d,
                               ParseDevice((*devices)[i], json_reader::Index(path + ".devices", i)));
      c.devices.push_back(std::move(d));
    }
  }
  return c;
}

}  // namespace

std::string SerializeCheckpoint(const ClaimMap& claims) {
  json arr = json::array();
  for (const auto& [uid, c] : claims) {
    json devices = json::array();
    for (const auto& d : c.devices) {
      devices.push_back({{"request", d.request},
                         {"pool", d.pool},
                         {"device", d.device},
                         {"rdmaDev", d.rdma_dev},
                         {"busId", d.bus_id},
                         {"cdiDeviceIds", d.cdi_device_ids}});
    }
    arr.push_back({{"uid", c.uid},
                   {"namespace", c.namespace_name},
                   {"name", c.name},
                   {"phase", PhaseName(c.phase)},
                   {"devices", devices},
                   {"podUids", c.pod_uids},
                   {"cdiSpecPath", c.cdi_spec_path}});
  }
  return json{{"version", kVersion}, {"claims", arr}}.dump(2) + "\n";
}

StatusOr<ClaimMap> ParseCheckpoint(std::string_view text) {
  RDMAK8S_ASSIGN_OR_RETURN(json j, json_reader::Parse(text, "$"));
  if (!j.is_object()) return Bad("$", "must be an object");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int>() != kVersion) {
    return Bad("$.version", "must be " + std::to_string(kVersion));
  }
  ClaimMap out;
  RDMAK8S_ASSIGN_OR_RETURN(const json* claims, json_reader::ArrayAt(j, "$", "claims"));
  if (claims == nullptr) return out;
  for (size_t i = 0; i < claims->size(); ++i) {
    std::string path = json_reader::Index("$.claims", i);
    RDMAK8S_ASSIGN_OR_RETURN(PreparedClaim c, ParseClaim((*claims)[i], path));
    if (out.count(c.uid)) return Bad(path + ".uid", "\"" + c.uid + "\" appears twice");
    out[c.uid] = std::move(c);
  }
  return out;
}

Checkpoint::Checkpoint(std::string state_dir, std::string driver_name)
    : dir_(std::move(state_dir)), driver_(std::move(driver_name)) {}

std::string Checkpoint::path() const {
  return driver_.empty() ? legacy_path() : dir_ + "/checkpoint-" + driver_ + ".json";
}

namespace {

// kNotFound when `path` does not exist.
StatusOr<ClaimMap> ReadCheckpointFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError(path + " does not exist");
    return ErrnoError(errno, "open " + path);
  }
  StatusOr<std::string> text = ReadFd(fd, path, kMaxCheckpointBytes);
  ::close(fd);
  if (!text.ok()) return text.status();
  StatusOr<ClaimMap> claims = ParseCheckpoint(*text);
  if (!claims.ok()) return claims.status().Prepend("checkpoint " + path);
  return claims;
}

// A claim of the one checkpoint every driver name shared before: ours when every device's CDI
// IDs are of our kind ("<driver>/claim=...").
bool PreparedBy(const PreparedClaim& c, const std::string& driver) {
  const std::string prefix = driver + "/claim=";
  for (const auto& d : c.devices) {
    for (const auto& id : d.cdi_device_ids) {
      if (id.rfind(prefix, 0) != 0) return false;
    }
  }
  return true;
}

}  // namespace

StatusOr<ClaimMap> Checkpoint::Load() const {
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir_), "state dir");
  StatusOr<ClaimMap> claims = ReadCheckpointFile(path());
  if (claims.ok() || claims.status().code() != StatusCode::kNotFound) return claims;
  if (driver_.empty()) return ClaimMap{};
  // First start under the per-driver name: take over our claims of the shared file.
  StatusOr<ClaimMap> legacy = ReadCheckpointFile(legacy_path());
  if (!legacy.ok()) {
    if (legacy.status().code() == StatusCode::kNotFound) return ClaimMap{};
    return legacy.status();
  }
  ClaimMap ours;
  for (auto& [uid, c] : *legacy) {
    if (PreparedBy(c, driver_)) ours[uid] = std::move(c);
  }
  RDMAK8S_RETURN_IF_ERROR_CTX(Save(ours), "take over " + legacy_path());
  return ours;
}

Status Checkpoint::Save(const ClaimMap& claims) const {
  RDMAK8S_RETURN_IF_ERROR_CTX(EnsurePrivateDir(dir_), "state dir");
  return WriteFileAtomic(path(), SerializeCheckpoint(claims), 0600).Prepend("save checkpoint");
}

}  // namespace rdmak8s::dra
