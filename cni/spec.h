// The CNI protocol as SPEC.md (containernetworking/cni) defines it, for spec versions 0.3.0,
// 0.3.1, 0.4.0, 1.0.0 and 1.1.0: the command environment, the error object, version negotiation
// and conversion of a result between versions. Pure code: no I/O, no exceptions escape.
//
// Thread safety: free functions over values.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/status.h"

namespace rdmak8s::cni {

inline constexpr std::array<std::string_view, 5> kSupportedVersions = {"0.3.0", "0.3.1", "0.4.0",
                                                                      "1.0.0", "1.1.0"};
inline constexpr std::string_view kLatestVersion = "1.1.0";

// SPEC.md "Error": well-known codes 1-99 (spec), 100+ ours (docs/cni.md).
enum ErrorCode : int {
  kErrIncompatibleVersion = 1,
  kErrUnsupportedField = 2,
  kErrUnknownContainer = 3,
  kErrInvalidEnv = 4,
  kErrIo = 5,
  kErrDecode = 6,
  kErrInvalidConfig = 7,
  kErrTryAgainLater = 11,
  kErrPluginNotAvailable = 50,
  kErrLimitedConnectivity = 51,
  // rdmak8s-specific.
  kErrDeviceNotFound = 100,   // no RDMA device matches, or several do
  kErrWiring = 101,           // moving the RDMA device / the device is unusable from the pod
  kErrGidMissing = 102,       // GID table never got a RoCE v2 GID for a pod IP
  kErrQos = 103,              // QoS conflict, or an unsupported knob with strict
  kErrState = 104,            // the state store could not be read or written
};

struct CniError {
  int code = 0;
  std::string msg;
  std::string details;
};

// Serialises the error object; `cni_version` is the config's (or the latest when unknown).
std::string ErrorJson(const CniError& e, std::string_view cni_version);

enum class Command { kAdd, kDel, kCheck, kVersion, kGc, kStatus };
std::string_view CommandName(Command c);

// The CNI_* environment of one invocation.
struct CniEnv {
  Command command = Command::kVersion;
  std::string container_id;  // CNI_CONTAINERID
  std::string netns;         // CNI_NETNS
  std::string ifname;        // CNI_IFNAME
  std::string args;          // CNI_ARGS
  std::string path;          // CNI_PATH
};

// Reads and validates the environment for the command it names (which variables each command
// requires is SPEC.md "Parameters"). Errors carry code 4 (invalid environment) naming the
// variable. `get` is getenv-like (null when unset).
std::optional<CniEnv> ParseEnv(const std::function<const char*(const char*)>& get, CniError* err);

// SPEC.md naming rules: container ID "[a-zA-Z0-9][a-zA-Z0-9_.-]*"; network name the same;
// interface name 1-15 bytes, not "." or "..", no '/', ':' or whitespace.
bool ValidContainerId(std::string_view id);
bool ValidNetworkName(std::string_view name);
bool ValidIfname(std::string_view ifname);

// The value of `key` in CNI_ARGS, "K1=V1;K2=V2" (SPEC.md "Parameters"; the runtimes pass
// K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_INFRA_CONTAINER_ID, K8S_POD_UID). kNotFound when no
// pair has that key; kInvalidArgument naming the key when two pairs give it different values
// (which one the runtime meant is unknowable). A part without '=' is no pair, and is skipped.
StatusOr<std::string> CniArg(std::string_view args, std::string_view key);

bool IsSupportedVersion(std::string_view v);
// Numeric comparison of "a.b.c" versions: <0, 0, >0. Unparsable parts count as 0.
int CompareVersions(std::string_view a, std::string_view b);

// VERSION's output for a config whose cniVersion is `cni_version` (empty: latest).
std::string VersionJson(std::string_view cni_version);

// Converts a result (a prevResult of any supported version) to the shape of version `to`:
// 0.3.x/0.4.0 IP entries carry "version" ("4"/"6"), 1.0.0+ ones don't; interface mtu,
// socketPath and pciID and route mtu/advmss/priority/table/scope exist only from 1.1.0.
// Sets "cniVersion". Errors (code 6 or 7) name what was malformed.
std::optional<nlohmann::json> ConvertResult(const nlohmann::json& result, std::string_view to,
                                            CniError* err);

}  // namespace rdmak8s::cni
