// The node-feature-discovery feature file: labels for `nodeSelector` (`rdma.rdmak8s.io/...`)
// that NFD's local source turns into node labels. NFD (source/local, docs "Feature files") reads
// every file of its features.d directory whose name does not start with '.', one
// `<name>[=<value>]` per line, '#' starting a comment. Ours is `<dir>/rdmak8s`:
//   rdma.rdmak8s.io/transport-<ib|roce|iwarp>=true   for each transport an advertised device has
//   rdma.rdmak8s.io/netns-mode=<shared|exclusive>    the node's RDMA netns mode, when known
//   rdma.rdmak8s.io/lossless-ready=<true|false>      the node check's last result, when it ran
// The directory is the node admin's setting (--nfd-features-dir), never a pod's input.
//
// Thread safety: none; one thread (the daemon's event loop).
#pragma once

#include <optional>
#include <set>
#include <string>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"
#include "rdmak8s/netlink/rdma_netlink.h"

namespace rdmak8s::dp {

inline constexpr const char* kNfdFeaturesDir = "/etc/kubernetes/node-feature-discovery/features.d";
inline constexpr const char* kNfdFeatureFileName = "rdmak8s";

struct NodeFeatures {
  std::set<Transport> transports;  // of the advertised devices (kUnknown is left out)
  std::optional<RdmaNetnsMode> netns_mode;
  std::optional<bool> lossless_ready;
  bool operator==(const NodeFeatures&) const = default;
};

// The file's text: a comment line, then one line per feature in the order above. Empty when
// there is no transport (nothing advertised: nothing to label).
std::string RenderNfdFeatures(const NodeFeatures& features);

class NfdFeatureFile {
 public:
  // `dir` is NFD's features.d; "" disables the file.
  explicit NfdFeatureFile(std::string dir) : dir_(std::move(dir)) {}
  std::string path() const { return dir_.empty() ? "" : dir_ + "/" + kNfdFeatureFileName; }

  // Writes the file when its text differs from what is there (a restart rewrites nothing that
  // did not change), atomically and without NFD ever reading a half-written file: the text goes
  // to the dot-file `.rdmak8s` (WriteFileAtomic), which is renamed over `rdmak8s`. Nothing to
  // advertise (no transport) removes the file. What is there is read back with
  // rdmak8s::ReadRegularFile: a symlink, a FIFO, a directory or more than 64 KiB at the path is
  // an error naming it (nothing replaced, nothing blocks). Errors name the step and the path.
  Status Update(const NodeFeatures& features);
  // Removes the file (the plugin stops advertising); a missing file is not an error.
  Status Remove();

 private:
  std::string dir_;
};

}  // namespace rdmak8s::dp
