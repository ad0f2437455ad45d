// CDI (Container Device Interface, spec 0.5.0) documents and their writer, for both agents (the
// device plugin's spec per pool, pool_cdi_spec.h; the DRA driver's per claim, claim_cdi_spec.h):
// one CDI device per RDMA device whose containerEdits carry that device's char devices, and the
// shared rdma_cm node in the spec-wide containerEdits. Writes are atomic (temporary file +
// rename) and skipped when the content did not change.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "node/allocate.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

// One CDI device of a spec: its name (after "<kind>=") and what its containerEdits carry.
struct CdiDevice {
  std::string name;
  std::vector<CharDeviceRef> char_devices;  // rdma_cm among them goes spec-wide (below)
  std::map<std::string, std::string> env;   // containerEdits.env, "K=V"; omitted when empty
};

// A CDI spec document (JSON text, stable key order) of `kind`: each device's own nodes in its
// containerEdits, rdma_cm (one node every device shares) once in the spec-wide containerEdits.
std::string BuildCdiSpecDocument(const std::string& kind, const std::vector<CdiDevice>& devices);
// Writes `content` to `path` atomically (rdmak8s::WriteFileAtomic); no-op when the file already
// holds exactly that, so runtimes watching the CDI dir see no spurious change. The current file is
// read with rdmak8s::ReadRegularFile: a symlink, a FIFO or anything else not a regular file at
// `path`, or one larger than kMaxCdiSpecBytes, is an error naming the path and the cause (nothing
// is written, nothing blocks); a missing file is written.
inline constexpr size_t kMaxCdiSpecBytes = size_t{16} << 20;
Status WriteFileIfChanged(const std::string& path, const std::string& content);

}  // namespace rdmak8s::node
