// The last results of the node check (`rdmak8s-inspect check --json`, docs/node-check.md), read
// from the file an operator's job writes them to, for the metrics (a gauge per check) and the
// node-feature file (lossless-ready). The check is not run by the plugin: it needs the NADs'
// QoS policy, DCB netlink, libibverbs and the runtime's /proc, more than a scrape should do or
// the plugin should hold; its result changes when someone changes the node, not per scrape.
//
// Thread safety: a pure function of the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

struct NodeCheckItem {
  std::string subject;  // "mlx5_0 on ens1f0np0", "node"
  std::string check;    // "pfc", "port state", "rdma netns mode", ...
  std::string result;   // "pass" | "fail" | "skip"
};

struct NodeCheckResults {
  bool passed = false;
  std::vector<NodeCheckItem> items;
  int64_t written_unix_seconds = 0;  // the file's mtime: when the check last ran
};

// Reads `path`. kNotFound when there is no file (the check has not run); kInvalidArgument naming
// the path when it is not the check's JSON (a file caught half written is that too: write it to
// a temporary and rename it); other read errors name the path. Read with rdmak8s::ReadRegularFile
// (links followed): a FIFO, a directory or anything else not a regular file at the path is
// kFailedPrecondition at once (a scrape never waits on it), more than 16 MiB kInvalidArgument.
StatusOr<NodeCheckResults> ReadNodeCheckResults(const std::string& path);

}  // namespace rdmak8s::dp
