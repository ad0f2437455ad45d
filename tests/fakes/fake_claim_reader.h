// FakeClaimReader: ResourceClaims held in memory, for tests of the DRA driver. Behaves like the
// API server where the preparer can tell: an unknown claim is kNotFound; a claim replaced under
// the same name has its new UID; SetUnavailable makes every read fail as a server that cannot
// be reached does. Counts reads, so tests can see that a prepared claim is answered from the
// checkpoint. Thread safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "dra/claim_reader.h"

namespace rdmak8s::fake {

class FakeClaimReader final : public dra::ClaimReader {
 public:
  void Put(dra::ResourceClaim claim) {
    std::lock_guard<std::mutex> lock(mu_);
    claims_[{claim.namespace_name, claim.name}] = std::move(claim);
  }
  void Delete(const std::string& ns, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    claims_.erase({ns, name});
  }
  void SetUnavailable(bool unavailable) {
    std::lock_guard<std::mutex> lock(mu_);
    unavailable_ = unavailable;
  }
  int reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }

  StatusOr<dra::ResourceClaim> GetClaim(const std::string& ns, const std::string& name,
                                        dra::ClaimDeadline /*deadline*/) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++reads_;
    if (unavailable_) return UnavailableError("get resourceclaim " + ns + "/" + name + ": connection refused");
    auto it = claims_.find({ns, name});
    if (it == claims_.end()) return NotFoundError("resourceclaims \"" + name + "\" not found in " + ns);
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, dra::ResourceClaim> claims_;
  bool unavailable_ = false;
  int reads_ = 0;
};

}  // namespace rdmak8s::fake
