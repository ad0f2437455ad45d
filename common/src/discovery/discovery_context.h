// Discovery's per-call context: what one DiscoverAll/DiscoverOne reads once and shares between
// devices (char-device and netdev indexes, the VF cache), and the lexical path rules every step
// of discovery uses. Internal to rdmak8s_common: discovery_*.cc are its only users.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"
#include "rdmak8s/discovery/discovery.h"

namespace rdmak8s::internal::discovery {

struct Context {
  std::string root;
  // class/infiniband_verbs + class/infiniband_mad, keyed by ibdev.
  std::unordered_map<std::string, std::vector<CharDevice>> chars;
  // The RDMA devices whose uverbs node hangs off each bus device directory. Char devices are not
  // network-namespace tagged: in exclusive mode a device moved into a pod still shows here, while
  // <bus device>/infiniband/ no longer lists it.
  std::unordered_map<std::string, std::set<std::string>> uverbs_ibdevs_by_parent;
  std::optional<CharDevice> rdma_cm;
  // class/net: the directory of the device a netdev sits on -> its netdevs.
  std::unordered_map<std::string, std::vector<std::string>> net_by_parent;
  std::vector<DeviceFailure> failures;  // char devices whose owner could not be read
  // Unreadable char devices by the directory they hang off (the owner's bus parent, or
  // devices/virtual): every RDMA device on that parent fails with it, since a device without
  // its uverbs node is not usable and we cannot tell which of them lost it.
  std::vector<std::pair<std::string, Status>> char_failures;
  // PF directory -> (VF address -> N of virtfnN), filled on first use: every VF of a PF would
  // otherwise list the PF and read all its virtfn links again.
  std::unordered_map<std::string, std::unordered_map<std::string, int>> vf_index_by_pf;
  // DiscoverOne: only char devices and netdevs that hang off this directory (the device's bus
  // parent, or devices/virtual for a soft device) are read; empty: all.
  std::string only_under;
  std::shared_ptr<std::mutex> vf_mu = std::make_shared<std::mutex>();  // guards vf_index_by_pf
};

// Reads the char-device classes (discovery_char_devices.h), rdma_cm and class/net
// (discovery_netdevs.h) under `root` into a new context. `only_under` as Context::only_under.
// An unreadable class directory is an error of the whole call; an unreadable entry lands in
// Context::failures or Context::char_failures.
StatusOr<Context> BuildContext(const std::string& root, std::string only_under = "");

// Numeric entry names ("0".."15", "1","2") sorted by value; others dropped.
std::vector<uint32_t> NumericEntries(const std::vector<std::string>& names);

// The path `link` (read from a symlink inside `dir`) points at, lexically (see the .cc for why).
std::string ResolveLink(const std::string& dir, const std::string& link);

// "/sys/" and "./sys" name the same tree as "/sys": normalise once so links resolved lexically
// compare equal.
std::string NormalRoot(const std::string& root);

// Appends `s` to `v` unless it is empty or already there (netdev lists keep discovery order).
void AddUnique(std::vector<std::string>& v, const std::string& s);

}  // namespace rdmak8s::internal::discovery
