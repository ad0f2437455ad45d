// ClaimStatusWriter: the seam between the claim status loop (claim_status_reporter.h) and the
// API server, as ClaimReader is for prepare. One call changes this driver's status.devices
// entries of one claim and nothing else: another driver's entries stay as the server holds them.
// The real implementation (dra/api/claim_status_writer.h) and the tests' fakes implement it.
//
// Thread safety: implementations allow concurrent calls for different claims.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/claim_reader.h"
#include "dra/claim_status.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

// Our new entries (a JSON list) from the allocation's devices of ours and our entries as the
// server holds them now (a list, maybe empty). Called once per attempt (again after a conflict,
// with what the server holds then).
using StatusEntriesFn = std::function<nlohmann::json(const std::vector<AllocatedDevice>& ours,
                                                     const nlohmann::json& current)>;

class ClaimStatusWriter {
 public:
  virtual ~ClaimStatusWriter() = default;
  // Replaces this driver's entries of claim `namespace_name`/`name` with build(...)'s, when they
  // differ (no write otherwise). The claim's UID must still be `uid`. OK when written or
  // nothing changed, and when the claim is not allocated any more (the server drops the
  // status then); kNotFound when the claim is gone; kFailedPrecondition when its UID differs;
  // kPermissionDenied when the server refused the change (RBAC: the message names what is
  // missing); kUnavailable after repeated conflicts; other codes naming the claim and the cause.
  // Returns by `deadline`.
  virtual Status Update(const std::string& namespace_name, const std::string& name,
                        const std::string& uid, const StatusEntriesFn& build,
                        ClaimDeadline deadline) = 0;
};

}  // namespace rdmak8s::dra
