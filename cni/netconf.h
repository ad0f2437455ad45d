// The rdmak8s network configuration (netconf): what the runtime passes on stdin, parsed and
// validated into plain values. Every field is documented in docs/cni.md.
//
// Parsing uses nlohmann::json; its exceptions stop here. Errors are CNI errors: code 6 when the
// input is not JSON, 1 for an unsupported cniVersion, 7 for an invalid field (named).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni/spec.h"
#include "rdmak8s/qos/qos_policy.h"

namespace rdmak8s::cni {

enum class LogLevel { kError = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

struct ValidAttachment {
  std::string container_id;
  std::string ifname;
};

struct NetConf {
  std::string cni_version;
  std::string name;
  std::string type;
  std::string device_id;             // "deviceID", or runtimeConfig.deviceID
  // "draRequest": without a deviceID, which of the pod's DRA-prepared devices: "<request>",
  // "<request>/<subrequest>" or "<claim>/<request>" (cni/dra_device.h). Empty: the only one.
  std::string dra_request;
  uint32_t port = 0;                 // 0: every port of the device
  int gid_timeout_ms = 5000;
  bool ensure_ipv6_gid = false;
  std::optional<uint16_t> pkey;
  std::string netns_mode;            // "" (any) | "shared" | "exclusive": STATUS/ADD require it
  QosPolicy qos;                     // "qos" (rdmak8s/qos/qos_policy.h)
  // Host paths, as the netconf sets them (empty: not set). They are the node's (NodeConfig): the
  // plugin refuses a netconf that sets one unless the node configuration allows overrides.
  std::string sysfs_root;
  std::string configfs_root;
  std::string state_dir;
  std::string log_file;
  std::optional<LogLevel> log_level;  // unset: the node configuration's
  std::optional<nlohmann::json> prev_result;
  std::vector<ValidAttachment> valid_attachments;  // GC: cni.dev/valid-attachments
  nlohmann::json raw;
};

// "error", "warning" (or "warn"), "info", "debug"; nullopt for anything else.
std::optional<LogLevel> ParseLogLevel(std::string_view level);

// Only the cniVersion (for error objects when the rest fails to parse); "" when absent.
std::string PeekCniVersion(std::string_view stdin_data);

// `command` decides what is required (GC reads cni.dev/valid-attachments).
std::optional<NetConf> ParseNetConf(std::string_view stdin_data, Command command, CniError* err);

}  // namespace rdmak8s::cni
