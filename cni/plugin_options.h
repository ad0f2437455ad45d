// PluginOptions: what an embedder injects into the CNI (cni/plugin.h's RunPlugin): the node
// configuration's defaults and the seams for the kernel (RDMA, rtnetlink and DCB netlink, a pod
// netns's sysfs). And how the rooms of an invocation open those netlink seams in a given netns.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cni/node_config.h"
#include "cni/sysfs_view.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/dcb_netlink.h"
#include "rdmak8s/netlink/netns.h"
#include "rdmak8s/netlink/rdma_netlink.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s::cni {

struct PluginOptions {
  // The node's configuration file (cni/node_config.h, docs/cni.md "Node configuration"), read by
  // every command but VERSION; main.cc takes $RDMAK8S_CNI_NODE_CONFIG when the runtime sets it.
  // Empty: no file is read and `node` is the node's configuration as is (in-process tests).
  std::string node_config_path = kNodeConfigPath;
  // Built-in defaults of the node configuration; each key of the file replaces one.
  NodeConfig node;
  // Each opens a handle in the calling thread's current netns.
  std::function<StatusOr<std::unique_ptr<RdmaNetlink>>()> new_rdma_netlink;
  std::function<StatusOr<std::unique_ptr<DcbNetlink>>()> new_dcb_netlink;
  std::function<StatusOr<std::unique_ptr<RouteNetlink>>()> new_route_netlink;
  // How to read a pod netns's sysfs (not owned; null: read the sysfs root as is). A netconf
  // sysfsRoot other than the node's (allowNetconfOverrides) always reads that tree as is.
  SysfsView* pod_sysfs = nullptr;
  int gid_poll_interval_ms = 10;
  // The whole call to kubelet's pod-resources API (a netconf deviceID's check): a hung kubelet
  // fails the ADD (error 11) instead of holding it.
  int pod_resources_timeout_ms = 10000;
  int stderr_fd = 2;  // logs; -1 to silence
};

// A handle of the options' factory opened in `ns` (the calling thread enters it for the open and
// comes back); nullptr: in the calling thread's netns, the node's. kUnimplemented when the
// options have no such factory (a build without it), else the factory's or setns's error.
StatusOr<std::unique_ptr<RdmaNetlink>> OpenRdmaNetlink(const PluginOptions& o, const Netns* ns);
StatusOr<std::unique_ptr<RouteNetlink>> OpenRouteNetlink(const PluginOptions& o, const Netns* ns);
// DCB netlink is only ever used on the node's PF: opened in the calling thread's netns.
StatusOr<std::unique_ptr<DcbNetlink>> OpenDcbNetlink(const PluginOptions& o);

}  // namespace rdmak8s::cni
