#include "rdmak8s/records/claim_gid_spec.h"

#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/file_util.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/records/pod_devices.h"

namespace rdmak8s {

namespace {

std::string FilePrefix(const std::string& driver, const std::string& claim_uid) {
  return driver + "-claim-gid_" + claim_uid + "_";
}

// A DRA device name is a DNS label: a driver name (a DNS subdomain) without a dot.
Status CheckDeviceName(const std::string& device) {
  if (device.find('.') == std::string::npos && CheckRecordDriver(device).ok()) return Status::Ok();
  return InvalidArgumentError("device name " + Quoted(device) + " is not a DNS label");
}

Status CheckNames(const std::string& driver, const std::string& claim_uid) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordDriver(driver));
  return CheckRecordUid("claim UID", claim_uid);
}

}  // namespace

std::string ClaimGidCdiKind(const std::string& driver) { return driver + "/claim-gid"; }

std::string ClaimGidCdiDeviceId(const std::string& driver, const std::string& claim_uid,
                                const std::string& device) {
  return ClaimGidCdiKind(driver) + "=" + claim_uid + "-" + device;
}

StatusOr<std::string> ClaimGidSpecPath(const std::string& cdi_dir, const std::string& driver,
                                       const std::string& claim_uid, const std::string& device) {
  RDMAK8S_RETURN_IF_ERROR(CheckNames(driver, claim_uid));
  RDMAK8S_RETURN_IF_ERROR(CheckDeviceName(device));
  return cdi_dir + "/" + FilePrefix(driver, claim_uid) + device + ".json";
}

std::map<std::string, std::string> ClaimGidEnv(std::optional<uint32_t> gid_index) {
  if (!gid_index) return {{kGidIndexEnv, kGidIndexPending}};
  const std::string i = std::to_string(*gid_index);
  return {{kGidIndexEnv, i}, {"NCCL_IB_GID_INDEX", i}, {"UCX_IB_GID_INDEX", i}};
}

std::string BuildClaimGidSpec(const std::string& driver, const std::string& claim_uid,
                              const std::string& device, std::optional<uint32_t> gid_index) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, v] : ClaimGidEnv(gid_index)) env.push_back(k + "=" + v);
  const nlohmann::json spec = {
      {"cdiVersion", "0.5.0"},
      {"kind", ClaimGidCdiKind(driver)},
      {"devices", {{{"name", claim_uid + "-" + device}, {"containerEdits", {{"env", env}}}}}}};
  return spec.dump(2) + "\n";
}

Status WriteClaimGidSpecIfAbsent(const std::string& cdi_dir, const std::string& driver,
                                 const std::string& claim_uid, const std::string& device) {
  RDMAK8S_ASSIGN_OR_RETURN(const std::string path, ClaimGidSpecPath(cdi_dir, driver, claim_uid, device));
  // A complete file linked into place: link(2) never replaces, so what the CNI wrote stays, and
  // the runtime never reads half a spec. The staging name does not end in .json (CDI reads
  // *.json and *.yaml only).
  const std::string staging = path + ".new";
  RDMAK8S_RETURN_IF_ERROR(
      WriteFileAtomic(staging, BuildClaimGidSpec(driver, claim_uid, device, std::nullopt), 0644)
          .Prepend("GID index CDI spec"));
  Status out = Status::Ok();
  if (::link(staging.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    out = ErrnoError(errno, "link " + staging + " to " + path).Prepend("GID index CDI spec");
  }
  ::unlink(staging.c_str());
  return out;
}

StatusOr<bool> SetClaimGidIndex(const std::string& cdi_dir, const std::string& driver,
                                const std::string& claim_uid, const std::string& device,
                                uint32_t gid_index) {
  RDMAK8S_ASSIGN_OR_RETURN(const std::string path, ClaimGidSpecPath(cdi_dir, driver, claim_uid, device));
  StatusOr<std::string> current = ReadRegularFile(path, kMaxClaimGidSpecBytes);
  if (!current.ok()) {
    if (current.status().code() == StatusCode::kNotFound) return false;
    return current.status().Prepend("GID index CDI spec " + path + " (not replaced)");
  }
  const std::string content = BuildClaimGidSpec(driver, claim_uid, device, gid_index);
  if (*current != content) {
    RDMAK8S_RETURN_IF_ERROR(WriteFileAtomic(path, content, 0644).Prepend("GID index CDI spec"));
  }
  return true;
}

Status RemoveClaimGidSpecs(const std::string& cdi_dir, const std::string& driver,
                           const std::string& claim_uid) {
  RDMAK8S_RETURN_IF_ERROR(CheckNames(driver, claim_uid));
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(cdi_dir.c_str()), ::closedir);
  if (!dir) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError(errno, "open " + cdi_dir).Prepend("remove GID index CDI specs");
  }
  const std::string prefix = FilePrefix(driver, claim_uid);
  while (const dirent* e = ::readdir(dir.get())) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string path = cdi_dir + "/" + name;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError(errno, "remove " + path).Prepend("remove GID index CDI specs");
    }
  }
  return Status::Ok();
}

}  // namespace rdmak8s
