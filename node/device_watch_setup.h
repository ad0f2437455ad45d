// How both agents' mains set up their device watch (device_watch.h): the flags they share
// (--rescan-interval, --port-poll-interval, --no-verbs: one name, one default, one help text)
// and the real event sources (rtnetlink link events, kernel uevents, verbs async events), each
// one the node cannot open logged and left out, never fatal: the periodic rescan covers for it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "node/device_watch.h"

namespace rdmak8s::node {

struct DeviceWatchFlags {
  int rescan_s = 300;
  double port_poll_s = 2;
  bool no_verbs = false;
};

// Adds --rescan-interval (1..86400 s), --port-poll-interval (0..3600 s, fractions allowed; 0
// disables) and --no-verbs to `app`, stored in `flags` (which must outlive the parse).
void AddDeviceWatchFlags(CLI::App& app, DeviceWatchFlags& flags);
// The options the parsed flags say, over `sysfs_root`.
DeviceWatchOptions DeviceWatchOptionsFrom(const DeviceWatchFlags& flags, std::string sysfs_root);
// The node's real sources: discovery over `sysfs_root` (with libibverbs unless --no-verbs), link
// events, uevents, and (unless --no-verbs) verbs async events.
DeviceSources BuildDeviceSources(const DeviceWatchFlags& flags, const std::string& sysfs_root);

}  // namespace rdmak8s::node
