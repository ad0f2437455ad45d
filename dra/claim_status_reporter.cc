// The loop that keeps prepared claims' status.devices entries current (dra/claim_status_reporter.h).
#include "dra/claim_status_reporter.h"

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>


namespace rdmak8s::dra {

namespace {

using nlohmann::json;

constexpr std::chrono::seconds kMaxBackoff{60};

// What of a catalog device the entry says: the same text, the same entry.
json DeviceInputs(const std::optional<CatalogDevice>& d) {
  if (!d) return nullptr;
  json ports = json::array();
  for (const auto& p : d->dev.ports) {
    ports.push_back({p.port_num, static_cast<int>(p.state), p.phys_state, p.pkeys, p.netdevs});
  }
  return {d->dev.name, d->dev.node_guid, d->dev.netdevs, ports, d->presence == node::Presence::kPresent,
          d->dev.numa_node()};
}

}  // namespace

ClaimStatusReporter::ClaimStatusReporter(ClaimStatusReporterOptions options, ClaimStatusWriter* writer,
                                         const DeviceCatalog* catalog, DraMetrics* metrics)
    : options_(std::move(options)), writer_(writer), catalog_(catalog), metrics_(metrics) {}

ClaimStatusReporter::~ClaimStatusReporter() { Stop(); }

void ClaimStatusReporter::Prepared(const PreparedClaim& claim) {
  std::lock_guard<std::mutex> lock(mu_);
  Claim& c = claims_[claim.uid];
  c.namespace_name = claim.namespace_name;
  c.name = claim.name;
  c.uid = claim.uid;
  c.devices = claim.devices;
  c.remove = false;
  c.written.clear();
  c.failures = 0;
  c.next_attempt = {};
  kicked_ = true;
  cv_.notify_all();
}

void ClaimStatusReporter::Unprepared(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = claims_.find(uid);
  if (it == claims_.end()) return;  // never prepared here since start: nothing of ours to remove
  it->second.remove = true;
  it->second.failures = 0;
  it->second.next_attempt = {};
  kicked_ = true;
  cv_.notify_all();
}

size_t ClaimStatusReporter::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return claims_.size();
}

std::string ClaimStatusReporter::Inputs(const Claim& c, std::vector<AttachmentFacts>* facts,
                                        std::string* facts_error) const {
  StatusOr<std::vector<AttachmentFacts>> read =
      ReadAttachmentFacts(options_.pod_devices_dir, c.uid, options_.driver_name);
  facts->clear();
  facts_error->clear();
  if (read.ok()) {
    *facts = *std::move(read);
  } else {
    // The status then says what the driver knows; the bad file is the CNI's (or an intruder's).
    *facts_error = read.status().message();
  }
  json in = json::array({*facts_error});
  for (const auto& d : c.devices) in.push_back(DeviceInputs(catalog_->Find(d.pool, d.device)));
  for (const auto& f : *facts) in.push_back(AttachmentFactsToJson(f));
  return in.dump();
}

Status ClaimStatusReporter::Write(const Claim& c, const std::vector<AttachmentFacts>& facts) {
  const int64_t now_s = options_.now ? options_.now() : static_cast<int64_t>(std::time(nullptr));
  const std::string now = Rfc3339(now_s);
  const bool remove = c.remove;
  StatusEntriesFn build = [&](const std::vector<AllocatedDevice>& ours, const json& current) {
    json out = json::array();
    if (remove) return out;
    for (const auto& a : ours) {
      const json previous = EntryOf(current, a);
      DeviceStatusInput in{options_.driver_name, a, catalog_->Find(a.pool, a.device), {}};
      for (const auto& f : facts) {
        if (f.device == a.device) in.attachments.push_back(f);
      }
      out.push_back(BuildDeviceStatus(in, previous, now));
    }
    return out;
  };
  return writer_->Update(c.namespace_name, c.name, c.uid, build,
                         std::chrono::steady_clock::now() + options_.write_timeout);
}

void ClaimStatusReporter::Failed(const std::string& uid, const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = claims_.find(uid);
  if (it == claims_.end()) return;
  Claim& c = it->second;
  const std::string what = "claim " + c.namespace_name + "/" + c.name;
  if (s.code() == StatusCode::kPermissionDenied) {
    if (metrics_ != nullptr) metrics_->CountClaimStatusWrite("forbidden");
    if (!c.forbidden_logged) {
      // Once per claim: the same missing RBAC would fill the log every backoff otherwise.
      SPDLOG_ERROR("{}: status.devices not written (the pod runs; the claim's status does not say what it "
                   "got): {}",
                   what, s.message());
      c.forbidden_logged = true;
    }
  } else {
    if (metrics_ != nullptr) metrics_->CountClaimStatusWrite("error");
    SPDLOG_WARN("{}: status.devices {}: {}", what, c.remove ? "not removed" : "not written", s.message());
  }
  ++c.failures;
  if (c.remove && c.failures >= kMaxRemovalAttempts) {
    SPDLOG_WARN("{}: giving up removing its status.devices entries after {} attempts", what, c.failures);
    claims_.erase(it);
    return;
  }
  const auto backoff = std::min<std::chrono::milliseconds>(
      kMaxBackoff, std::chrono::milliseconds(1000) * (1 << std::min(c.failures - 1, 6)));
  c.next_attempt = std::chrono::steady_clock::now() + backoff;
}

void ClaimStatusReporter::SyncOnce() {
  std::lock_guard<std::mutex> pass(sync_mu_);
  std::vector<Claim> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kicked_ = false;
    const auto now = std::chrono::steady_clock::now();
    for (const auto& [uid, c] : claims_) {
      if (c.next_attempt <= now) due.push_back(c);
    }
  }
  for (const Claim& c : due) {
    std::vector<AttachmentFacts> facts;
    std::string facts_error;
    const std::string inputs = c.remove ? std::string() : Inputs(c, &facts, &facts_error);
    if (!c.remove && inputs == c.written) continue;
    // Logged when it changes (it is part of the inputs), not on every pass.
    if (!facts_error.empty()) {
      SPDLOG_WARN("claim {}/{}: attachment facts not used: {}", c.namespace_name, c.name, facts_error);
    }
    Status s = Write(c, facts);
    const bool gone = s.code() == StatusCode::kNotFound || s.code() == StatusCode::kFailedPrecondition;
    if (!s.ok() && !gone) {
      Failed(c.uid, s);
      continue;
    }
    if (s.ok() && metrics_ != nullptr) metrics_->CountClaimStatusWrite("ok");
    if (gone) SPDLOG_INFO("claim {}/{}: no status written: {}", c.namespace_name, c.name, s.message());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = claims_.find(c.uid);
    if (it == claims_.end()) continue;
    // A Prepared or Unprepared meanwhile wins: it is written on the next pass.
    if (it->second.remove != c.remove || it->second.devices != c.devices) continue;
    if (c.remove) {
      claims_.erase(it);
    } else {
      it->second.written = inputs;
      it->second.failures = 0;
    }
  }
}

void ClaimStatusReporter::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void ClaimStatusReporter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void ClaimStatusReporter::Run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, options_.refresh_interval, [&] { return stopping_ || kicked_; });
      if (stopping_) return;
    }
    SyncOnce();
  }
}

}  // namespace rdmak8s::dra
