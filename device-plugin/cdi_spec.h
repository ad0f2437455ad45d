// CDI (Container Device Interface, spec 0.5.0) for one pool: one CDI device per RDMA device
// ("<prefix>/<pool>=<rdma_dev>") whose containerEdits carry that device's char devices, and the
// shared rdma_cm node in the spec-wide containerEdits. The daemon keeps one file per pool in
// --cdi-dir in sync with discovery; writes are atomic (temporary file + rename) and skipped when
// the content did not change.
#pragma once

#include <string>

#include "device-plugin/pool_state.h"
#include "rdmak8s/status.h"

namespace rdmak8s::dp {

// The CDI spec document (JSON text, stable key order) for `state`.
std::string BuildCdiSpec(const PoolState& state);
// "<cdi_dir>/rdmak8s-<prefix>-<pool>.json" with '/' in the prefix made '_'.
std::string CdiSpecPath(const std::string& cdi_dir, const std::string& resource);
// Writes `content` to `path` atomically (rdmak8s::WriteFileAtomic); no-op when the file already
// holds exactly that, so runtimes watching the CDI dir see no spurious change.
Status WriteFileIfChanged(const std::string& path, const std::string& content);

}  // namespace rdmak8s::dp
