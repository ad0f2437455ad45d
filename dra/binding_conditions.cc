// Answers the binding conditions of claims held at binding on our devices (binding_conditions.h).
#include "dra/binding_conditions.h"

#include <ctime>
#include <exception>

#include <spdlog/spdlog.h>
namespace rdmak8s::dra {
namespace {

using nlohmann::json;

// The status of condition `type` in entry `e`, "" when it has none.
std::string ConditionStatus(const json& e, const std::string& type) {
  if (!e.contains("conditions") || !e["conditions"].is_array()) return "";
  for (const auto& c : e["conditions"]) {
    if (c.is_object() && c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

bool Waits(const HeldClaim& claim, const AllocatedDevice& a) {
  for (const auto& w : claim.waiting) {
    if (w == a) return true;
  }
  return false;
}

}  // namespace

BindingConditionSetter::BindingConditionSetter(BindingConditionOptions options, ClaimStatusWriter* writer,
                                               const DeviceCatalog* catalog)
    : options_(std::move(options)), writer_(writer), catalog_(catalog) {}

std::chrono::steady_clock::time_point BindingConditionSetter::Now() const {
  return options_.now ? options_.now() : std::chrono::steady_clock::now();
}

void BindingConditionSetter::Seen(const HeldClaim& claim) {
  if (claim.waiting.empty()) {
    Gone(claim.uid);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(claim.uid);
  if (it != held_.end()) {
    it->second.claim = claim;  // the timeout runs on from the first sighting
    return;
  }
  if (held_.size() >= kMaxHeldClaims) {
    SPDLOG_ERROR("binding conditions: claim {}/{} not held: {} claims already wait for ports of this "
                 "node (the scheduler's bindingTimeout will end its wait)",
                 claim.namespace_name, claim.name, kMaxHeldClaims);
    return;
  }
  SPDLOG_INFO("binding conditions: claim {}/{} waits for the port of {} device(s) to become ACTIVE",
              claim.namespace_name, claim.name, claim.waiting.size());
  held_.emplace(claim.uid, Held{claim, Now()});
}

void BindingConditionSetter::Gone(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  held_.erase(uid);
}

std::vector<HeldClaim> BindingConditionSetter::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldClaim> out;
  for (const auto& [uid, h] : held_) out.push_back(h.claim);
  return out;
}

bool BindingConditionSetter::PortActive(const AllocatedDevice& d) const {
  // The condition the entry would say: what the scheduler reads is what was decided here.
  DeviceStatusInput in{options_.driver_name, d, catalog_->Find(d.pool, d.device), {}};
  return ConditionStatus(BuildDeviceStatus(in, json(), Rfc3339(0)), kConditionPortActive) == "True";
}

Status BindingConditionSetter::Write(const HeldClaim& claim, bool failed) {
  const int64_t now_s = options_.wall_now ? options_.wall_now() : static_cast<int64_t>(std::time(nullptr));
  const std::string now = Rfc3339(now_s);
  const std::string failure_message = "the port did not become ACTIVE within " +
                                      std::to_string(options_.timeout.count()) +
                                      " s (--binding-timeout): the scheduler tries another device";
  StatusEntriesFn build = [&](const std::vector<AllocatedDevice>& ours, const json& current) {
    json out = json::array();
    for (const auto& a : ours) {
      const json previous = EntryOf(current, a);
      DeviceStatusInput in{options_.driver_name, a, catalog_->Find(a.pool, a.device), {}};
      json entry = BuildDeviceStatus(in, previous, now);
      if (failed && Waits(claim, a)) {
        entry["conditions"].push_back({{"type", kConditionPortActivationFailed},
                                       {"status", "True"},
                                       {"reason", kPortNotActiveReason},
                                       {"message", failure_message},
                                       {"lastTransitionTime", now}});
      }
      out.push_back(std::move(entry));
    }
    return out;
  };
  // The deadline is the real clock's: the injected one decides timeouts only.
  return writer_->Update(claim.namespace_name, claim.name, claim.uid, build,
                         std::chrono::steady_clock::now() + options_.write_timeout);
}

int BindingConditionSetter::SyncOnce() {
  std::vector<Held> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [uid, h] : held_) due.push_back(h);
  }
  int written = 0;
  const auto now = Now();
  for (const Held& h : due) {
    bool active = true;
    for (const auto& d : h.claim.waiting) active = active && PortActive(d);
    const bool timed_out = !active && now - h.since >= options_.timeout;
    if (!active && !timed_out) continue;
    const std::string what = "claim " + h.claim.namespace_name + "/" + h.claim.name;
    Status s = Write(h.claim, timed_out);
    // Gone (kNotFound, another UID): nothing left to answer.
    if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kFailedPrecondition) {
      SPDLOG_WARN("binding conditions: {}: {} not written (tried again): {}", what,
                  timed_out ? kConditionPortActivationFailed : kConditionPortActive, s.ToString());
      continue;
    }
    if (s.ok()) {
      ++written;
      if (timed_out) {
        SPDLOG_WARN("binding conditions: {}: {}=True: the port is not ACTIVE after {} s", what,
                    kConditionPortActivationFailed, options_.timeout.count());
      } else {
        SPDLOG_INFO("binding conditions: {}: {}=True: the pod may be bound", what, kConditionPortActive);
      }
    }
    Gone(h.claim.uid);
  }
  return written;
}

void BindingConditionSetter::Run() {
  uint64_t seen = catalog_->generation();
  while (!catalog_->shut_down()) {
    try {
      SyncOnce();
    } catch (const std::exception& e) {  // the edge of this thread: log, go on
      SPDLOG_ERROR("binding conditions: pass failed: {}", e.what());
    }
    seen = catalog_->WaitForChange(seen, std::chrono::steady_clock::now() + std::chrono::seconds(1));
  }
}

}  // namespace rdmak8s::dra
