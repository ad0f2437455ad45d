// The rdmak8s chained CNI plugin as a library: one call per invocation, everything host-specific
// injected through PluginOptions, so tests drive it in-process against real network namespaces,
// fixture sysfs trees and fake RDMA/DCB netlink, while main.cc wires the real ones.
//
// What each command does (docs/cni.md has the full story):
//   ADD    resolve the RDMA device (deviceID, or CNI_IFNAME's device in the pod), check it (IB port
//          ACTIVE, pkey), apply QoS knobs, move it into the pod (exclusive mode) or check it is
//          visible there (shared), wait for the pod IPs' RoCE v2 GIDs, record the attachment,
//          return prevResult. Any failure undoes every step done.
//   DEL    undo what the record says; missing netns/record/device-at-home are success.
//   CHECK  verify the device, GIDs and every recorded knob still hold.
//   GC     release every attachment of the network not in cni.dev/valid-attachments (a GC
//          without that list is malformed: error 7, nothing released).
//   STATUS error 50 when RDMA is unavailable or the netns mode can't serve the config.
//   VERSION the supported spec versions.
//
// Thread safety: RunPlugin may run concurrently from several threads or processes sharing a state
// dir (a file lock serialises them); the options' factories must then be thread safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cni/plugin_options.h"

namespace rdmak8s::cni {

struct PluginOutput {
  int exit_code = 0;
  std::string stdout_data;  // the result, the VERSION answer, or the error object
};

// One invocation: `getenv` reads CNI_* variables, `stdin_data` is the netconf. Host paths and the
// log file are the node configuration's; a netconf that sets one is refused (error 7 naming the
// key) unless that configuration allows overrides, and DEL ignores them.
PluginOutput RunPlugin(const PluginOptions& options,
                       const std::function<const char*(const char*)>& getenv,
                       std::string_view stdin_data);

}  // namespace rdmak8s::cni
