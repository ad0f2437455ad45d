#include "dra/preparer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "dra/claim_cdi_spec.h"
#include "node/allocate.h"
#include "node/cdi_spec.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/records/attachment_facts.h"
#include "rdmak8s/records/claim_gid_spec.h"
#include "rdmak8s/records/pod_devices.h"

namespace rdmak8s::dra {

namespace {

// Only for a ref CheckRef accepted: its parts are plain names.
std::string Named(const ClaimRef& ref) {
  return "claim " + ref.namespace_name + "/" + ref.name + " (UID " + ref.uid + ")";
}

// A config entry naming "nic" applies to the result of "nic" and of its subrequests "nic/x".
bool Applies(const OpaqueConfig& c, const std::string& request) {
  if (c.requests.empty()) return true;
  for (const auto& r : c.requests) {
    if (r == request || request.rfind(r + "/", 0) == 0) return true;
  }
  return false;
}

// Who may set an opaque option (docs/trust.md). A DeviceClass is the cluster admin's: it may set
// every option the device plugin's pool "allocate" takes. A ResourceClaim is any namespace
// user's: only the options that describe the devices it got (env naming them). issm (subnet
// manager access: take over the SM role, rewrite PKey partitions), roceUmad (raw MADs) and env
// (LD_PRELOAD and the like, in every container of the claim) are the admin's.
bool ClaimMaySet(std::string_view key) {
  return std::find(kClaimSettableOptions.begin(), kClaimSettableOptions.end(), key) !=
         kClaimSettableOptions.end();
}

// A FromClaim entry: refused naming the first key a claim may not set. A text that is not a
// JSON object is left to ParseAllocateOptions, whose error names it.
Status CheckClaimSettable(const std::string& parameters) {
  const StatusOr<nlohmann::json> j = json_reader::Parse(parameters, "parameters");
  if (!j.ok() || !j->is_object()) return Status::Ok();
  for (auto it = j->begin(); it != j->end(); ++it) {
    if (!ClaimMaySet(it.key())) {
      return PermissionDeniedError("key " + Quoted(it.key()) +
                                   ": only a DeviceClass (the cluster admin) may set it, not a "
                                   "ResourceClaim (a claim may set " +
                                   Join(std::vector<std::string>(kClaimSettableOptions.begin(),
                                                                 kClaimSettableOptions.end())) +
                                   "; docs/trust.md)");
    }
  }
  return Status::Ok();
}

StatusOr<node::AllocateOptions> OptionsFor(const ResourceClaim& claim, const std::string& driver,
                                         const std::string& request) {
  node::AllocateOptions out;
  for (size_t i = 0; i < claim.config.size(); ++i) {
    const OpaqueConfig& c = claim.config[i];
    if (c.driver != driver || !Applies(c, request)) continue;
    const std::string what =
        "opaque config " + std::to_string(i) + " (" + Quoted(c.source) + ") for request " + request;
    if (c.source == kFromClaim) {
      RDMAK8S_RETURN_IF_ERROR_CTX(CheckClaimSettable(c.parameters), what);
    } else if (c.source != kFromClass) {
      // A source a newer API may add: whose it is we cannot tell, so it is nobody's.
      return PermissionDeniedError(what + ": the source is neither " + std::string(kFromClass) +
                                   " nor " + kFromClaim);
    }
    StatusOr<node::AllocateOptions> parsed = node::ParseAllocateOptions(c.parameters);
    if (!parsed.ok()) return parsed.status().Prepend(what);
    out = *parsed;
  }
  return out;
}

// Kubelet's names are untrusted: the UID names files (CDI spec, pod records), namespace and
// name go into the API path. Checked before anything is read or written.
Status CheckRef(const ClaimRef& ref) {
  RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("claim UID", ref.uid));
  return CheckClaimName(ref.namespace_name, ref.name);
}

// The pods the claim is reserved for, each UID checked before the write-ahead: a UID that
// cannot name a pod record would leave a checkpoint entry no unprepare could clear.
StatusOr<std::vector<std::string>> PodUids(const ResourceClaim& claim) {
  std::vector<std::string> out;
  for (size_t i = 0; i < claim.reserved_for.size(); ++i) {
    const ConsumerReference& r = claim.reserved_for[i];
    if (!r.api_group.empty() || r.resource != "pods" || r.uid.empty()) continue;
    RDMAK8S_RETURN_IF_ERROR(CheckRecordUid("status.reservedFor[" + std::to_string(i) + "] pod UID", r.uid));
    out.push_back(r.uid);
  }
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<Preparer>> Preparer::Create(PreparerOptions options, ClaimReader* reader,
                                                     const DeviceCatalog* catalog) {
  RDMAK8S_ASSIGN_OR_RETURN(ClaimMap claims, Checkpoint(options.state_dir, options.driver_name).Load());
  return std::unique_ptr<Preparer>(
      new Preparer(std::move(options), reader, catalog, std::move(claims)));
}

Preparer::Preparer(PreparerOptions options, ClaimReader* reader, const DeviceCatalog* catalog,
                   ClaimMap claims)
    : options_(std::move(options)),
      reader_(reader),
      catalog_(catalog),
      checkpoint_(options_.state_dir, options_.driver_name),
      claims_(std::move(claims)) {}

ClaimMap Preparer::Claims() const {
  std::lock_guard<std::mutex> lock(mu_);
  return claims_;
}

StatusOr<PreparedClaim> Preparer::Build(const ClaimRef& ref, const ResourceClaim& claim,
                                        std::string& cdi_spec) const {
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> pods, PodUids(claim));
  PreparedClaim out{ref.uid, ref.namespace_name, ref.name, ClaimPhase::kPreparing, {}, std::move(pods), ""};
  std::vector<ClaimDevice> cdi_devices;
  for (const auto& r : claim.results) {
    if (r.driver != options_.driver_name) continue;
    std::optional<CatalogDevice> d = catalog_->Find(r.pool, r.device);
    if (!d) {
      return NotFoundError("device " + r.pool + "/" + r.device + " (request " + r.request +
                           ") is not a device of this node (pool " + catalog_->pool() + ")");
    }
    if (d->presence != node::Presence::kPresent) {
      return FailedPreconditionError("device " + r.pool + "/" + r.device + " (" + d->dev.name +
                                     ") is not on the node: moved into a pod's network namespace");
    }
    if (!d->health.healthy) {
      return FailedPreconditionError("device " + r.pool + "/" + r.device + " (" + d->dev.name +
                                     ") is unhealthy: " + d->health.reason);
    }
    RDMAK8S_ASSIGN_OR_RETURN(node::AllocateOptions options,
                             OptionsFor(claim, options_.driver_name, r.request));
    std::vector<std::string> ids = {ClaimCdiDeviceId(options_.driver_name, ref.uid, r.device)};
    // One spec holds one GID index: only a claim of one pod can carry it (docs/dra.md).
    if (options.gid_index_env && d->dev.transport == Transport::kRoce && out.pod_uids.size() == 1) {
      ids.push_back(ClaimGidCdiDeviceId(options_.driver_name, ref.uid, r.device));
    }
    out.devices.push_back({r.request, r.pool, r.device, d->dev.name, d->dev.bus_device_id(), ids});
    cdi_devices.push_back({r.request, r.device, d->dev, options});
  }
  if (!cdi_devices.empty()) {
    out.cdi_spec_path = ClaimCdiSpecPath(options_.cdi_dir, options_.driver_name, ref.uid);
    cdi_spec = BuildClaimCdiSpec(options_.driver_name, ref.uid, cdi_devices, options_.dev_root);
  }
  return out;
}

StatusOr<std::optional<std::vector<PreparedDevice>>> Preparer::AnsweredFromCheckpoint(
    const ClaimRef& ref) const {
  auto known = claims_.find(ref.uid);
  if (known == claims_.end()) return std::optional<std::vector<PreparedDevice>>();
  const PreparedClaim& c = known->second;
  if (c.namespace_name != ref.namespace_name || c.name != ref.name) {
    return InvalidArgumentError(Named(ref) + ": that UID was prepared as claim " + c.namespace_name +
                                "/" + c.name);
  }
  if (c.phase != ClaimPhase::kPrepared) return std::optional<std::vector<PreparedDevice>>();
  return std::optional<std::vector<PreparedDevice>>(c.devices);
}

ClaimDeadline Preparer::ReadDeadline(std::optional<ClaimDeadline> call_deadline) const {
  ClaimDeadline deadline = std::chrono::steady_clock::now() + options_.claim_read_timeout;
  if (call_deadline) deadline = std::min(deadline, *call_deadline - options_.answer_margin);
  return deadline;
}

StatusOr<std::vector<PreparedDevice>> Preparer::Prepare(const ClaimRef& ref,
                                                        std::optional<ClaimDeadline> call_deadline) {
  RDMAK8S_RETURN_IF_ERROR_CTX(CheckRef(ref), "prepare");
  uint64_t read_started = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::vector<PreparedDevice>> done, AnsweredFromCheckpoint(ref));
    if (done) return *std::move(done);
    read_started = unprepares_;
    ++reads_in_flight_[ref.uid];
  }

  // The API read, without the lock: a slow or hung answer for this claim must not hold up
  // another claim's prepare or any unprepare. Bounded inside kubelet's deadline.
  const ClaimDeadline deadline = ReadDeadline(call_deadline);
  StatusOr<ResourceClaim> read =
      std::chrono::steady_clock::now() < deadline
          ? reader_->GetClaim(ref.namespace_name, ref.name, deadline)
          : StatusOr<ResourceClaim>(DeadlineExceededError("no time left before kubelet's deadline"));

  std::lock_guard<std::mutex> lock(mu_);
  const bool unprepared_meanwhile = EndRead(ref.uid, read_started);
  if (unprepared_meanwhile) {
    return FailedPreconditionError(Named(ref) + " was unprepared while it was read; nothing was written");
  }
  // Another prepare of this claim may have finished while this one read.
  RDMAK8S_ASSIGN_OR_RETURN(std::optional<std::vector<PreparedDevice>> done, AnsweredFromCheckpoint(ref));
  if (done) return *std::move(done);
  auto known = claims_.find(ref.uid);

  if (!read.ok()) return read.status().Prepend("read " + Named(ref));
  const ResourceClaim& claim = *read;
  if (claim.uid != ref.uid) {
    return FailedPreconditionError(Named(ref) + ": the API server's claim of that name has UID " +
                                   Quoted(claim.uid, 128) + " (deleted and re-created?)");
  }
  if (!claim.allocated) return FailedPreconditionError(Named(ref) + " is not allocated");

  std::string cdi_spec;
  StatusOr<PreparedClaim> built = Build(ref, claim, cdi_spec);
  if (!built.ok()) return built.status().Prepend("prepare " + Named(ref));
  PreparedClaim rec = *std::move(built);

  // A retry of a prepare that did not finish: pods no longer reserved lose their records.
  if (known != claims_.end()) {
    RDMAK8S_RETURN_IF_ERROR_CTX(RemoveFromNode(known->second, rec.pod_uids), "prepare " + Named(ref));
  }

  ClaimMap next = claims_;
  next[ref.uid] = rec;
  RDMAK8S_RETURN_IF_ERROR_CTX(checkpoint_.Save(next), "prepare " + Named(ref));
  claims_ = next;

  if (!rec.cdi_spec_path.empty()) {
    RDMAK8S_RETURN_IF_ERROR_CTX(node::WriteFileIfChanged(rec.cdi_spec_path, cdi_spec),
                                "prepare " + Named(ref) + ": CDI spec");
  }
  for (const auto& d : rec.devices) {
    if (d.cdi_device_ids.size() < 2) continue;  // no GID index spec asked for
    RDMAK8S_RETURN_IF_ERROR_CTX(
        WriteClaimGidSpecIfAbsent(options_.cdi_dir, options_.driver_name, ref.uid, d.device),
        "prepare " + Named(ref));
  }
  PodClaimRecord pod_record{ref.namespace_name, ref.name, ref.uid, {}};
  for (const auto& d : rec.devices) {
    pod_record.devices.push_back(
        {d.request, options_.driver_name, d.pool, d.device, d.rdma_dev, d.bus_id});
  }
  for (const auto& pod : rec.pod_uids) {
    RDMAK8S_RETURN_IF_ERROR_CTX(
        WritePodClaimRecord(options_.pod_devices_dir, pod, options_.driver_name, pod_record),
        "prepare " + Named(ref));
  }

  rec.phase = ClaimPhase::kPrepared;
  next[ref.uid] = rec;
  RDMAK8S_RETURN_IF_ERROR_CTX(checkpoint_.Save(next), "prepare " + Named(ref));
  claims_ = std::move(next);
  SPDLOG_INFO("prepared {}: {} device(s) for {} pod(s)", Named(ref), rec.devices.size(),
              rec.pod_uids.size());
  if (reporter_ != nullptr) reporter_->Prepared(rec);
  return rec.devices;
}

bool Preparer::EndRead(const std::string& uid, uint64_t read_started) {
  auto in_flight = reads_in_flight_.find(uid);
  auto unprepared = unprepared_at_.find(uid);
  const bool meanwhile = unprepared != unprepared_at_.end() && unprepared->second > read_started;
  if (--in_flight->second == 0) {
    reads_in_flight_.erase(in_flight);
    if (unprepared != unprepared_at_.end()) unprepared_at_.erase(unprepared);
  }
  return meanwhile;
}

Status Preparer::RemoveFromNode(const PreparedClaim& claim, const std::vector<std::string>& keep_pods) {
  for (const auto& pod : claim.pod_uids) {
    if (std::find(keep_pods.begin(), keep_pods.end(), pod) != keep_pods.end()) continue;
    if (Status plain = CheckRecordUid("pod UID", pod); !plain.ok()) {
      // No record can have been written under it (the writer refuses it too); a checkpoint of
      // an older driver may still list it. Skipping it lets the rest of the claim go.
      SPDLOG_WARN("claim UID {}: skipping a pod record that cannot exist: {}", claim.uid, plain.message());
      continue;
    }
    RDMAK8S_RETURN_IF_ERROR(
        RemovePodClaimRecord(options_.pod_devices_dir, pod, options_.driver_name, claim.uid));
  }
  return Status::Ok();
}

Status Preparer::Unprepare(const ClaimRef& ref) {
  RDMAK8S_RETURN_IF_ERROR_CTX(CheckRef(ref), "unprepare");
  std::lock_guard<std::mutex> lock(mu_);
  // A prepare reading this claim now must not write it once it is back.
  if (reads_in_flight_.count(ref.uid) != 0) unprepared_at_[ref.uid] = ++unprepares_;
  std::string spec = ClaimCdiSpecPath(options_.cdi_dir, options_.driver_name, ref.uid);
  auto it = claims_.find(ref.uid);
  if (it != claims_.end()) {
    RDMAK8S_RETURN_IF_ERROR_CTX(RemoveFromNode(it->second, {}), "unprepare " + Named(ref));
    if (!it->second.cdi_spec_path.empty()) spec = it->second.cdi_spec_path;
  }
  if (::unlink(spec.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(errno, "remove " + spec).Prepend("unprepare " + Named(ref));
  }
  RDMAK8S_RETURN_IF_ERROR_CTX(RemoveClaimGidSpecs(options_.cdi_dir, options_.driver_name, ref.uid),
                              "unprepare " + Named(ref));
  RDMAK8S_RETURN_IF_ERROR_CTX(RemoveClaimAttachmentFacts(options_.pod_devices_dir, ref.uid),
                              "unprepare " + Named(ref));
  if (reporter_ != nullptr) reporter_->Unprepared(ref.uid);
  if (it == claims_.end()) return Status::Ok();
  ClaimMap next = claims_;
  next.erase(ref.uid);
  RDMAK8S_RETURN_IF_ERROR_CTX(checkpoint_.Save(next), "unprepare " + Named(ref));
  claims_ = std::move(next);
  SPDLOG_INFO("unprepared {}", Named(ref));
  return Status::Ok();
}

}  // namespace rdmak8s::dra
