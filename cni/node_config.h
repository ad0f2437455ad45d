// The node's configuration of the CNI: host paths and log destination, owned by the node (written
// by the installer DaemonSet), never by a NetworkAttachmentDefinition. A NAD is written by
// namespace users; a path in it would let them make the plugin, running as root, create, append
// to or truncate files anywhere on the node. docs/cni.md, "Node configuration", has the format.
//
// The file's path is fixed (kNodeConfigPath). Only the runtime process's environment
// (kNodeConfigEnv) moves it, which no NAD, pod annotation, CNI_ARGS or runtimeConfig can set.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cni/netconf.h"
#include "cni/spec.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::cni {

inline constexpr char kNodeConfigPath[] = "/etc/cni/rdmak8s/node.json";
inline constexpr char kNodeConfigEnv[] = "RDMAK8S_CNI_NODE_CONFIG";

struct NodeConfig {
  std::string sysfs_root = "/sys";
  std::string configfs_root = "/sys/kernel/config";
  std::string state_dir = "/var/lib/cni/rdmak8s";
  // The DRA driver's records of each pod's prepared devices (rdmak8s/records/pod_devices.h; the
  // driver's --pod-devices-dir). Only the node configuration sets it: no netconf key does, not
  // even with allow_netconf_overrides, since it chooses which device a root process moves.
  std::string pod_devices_dir = "/run/rdmak8s/dra-pods";
  // kubelet's pod-resources API (cni/pod_resources_client.h): which device IDs kubelet gave each
  // pod, what a netconf deviceID must be one of. Only the node configuration sets it, as
  // pod_devices_dir: the answer decides which device a root process moves.
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  // The runtime's CDI spec dir (the DRA driver's --cdi-dir): after an ADD, the CNI fills in the
  // GID index spec of a claim that asked for it (rdmak8s/records/claim_gid_spec.h), never creating
  // one. Only the node configuration sets it: what is written there reaches containers' env.
  std::string cdi_dir = "/var/run/cdi";
  std::string log_file;                  // empty: stderr only
  LogLevel log_level = LogLevel::kInfo;  // a netconf logLevel overrides it
  // Lets a netconf set sysfsRoot/configfsRoot/stateDir/logFile (tests on fixture trees). Never
  // on a node where NAD authors are not node admins.
  bool allow_netconf_overrides = false;
};

// `defaults` with every key of the JSON file at `path` applied. A missing file is `defaults`.
// Fails (InvalidArgument, naming the file and the key) on an unknown key, a wrong type or a
// relative path (the file's own `path` included), and (FailedPrecondition) on a file that is not a regular file owned by the
// user we run as or that group or others can write: whoever can write it owns the node's paths.
StatusOr<NodeConfig> LoadNodeConfig(const std::string& path, const NodeConfig& defaults = {});

// The netconf keys that name host paths, in the order of the docs, for those `conf` sets.
std::vector<std::string> NetconfHostPathKeys(const NetConf& conf);

// The host paths and log file one invocation uses.
struct InvocationPaths {
  NodeConfig paths;  // the node's, with the netconf's host path keys when the node allows them
  // The sysfs root is a tree to read as is (a netconf sysfsRoot other than the node's, however
  // spelled), not the node's sysfs, whose pod views are mounts in the pods' netns.
  bool sysfs_as_is = false;
  // Not empty when the netconf's host path keys were ignored (DEL): the warning to log.
  std::string ignored;
};

// The paths an invocation of `command` with `conf` uses on a node configured as `node`; `where`
// names the node configuration in messages (its file). When `conf` sets host path keys the node
// does not allow: DEL ignores them (it must still undo what ADD did, from the node's state dir,
// and write nothing where the netconf says); any other command fails with InvalidArgument
// naming the keys (error 7).
StatusOr<InvocationPaths> PathsForInvocation(const NodeConfig& node, const NetConf& conf,
                                             Command command, const std::string& where);

}  // namespace rdmak8s::cni
