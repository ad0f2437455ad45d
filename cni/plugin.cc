// The commands of the chained CNI plugin (cni/plugin.h): what each does, in which order, and how
// a failure is answered. The work is done by rooms, each given what it needs:
//   cni/device_resolver.h  which RDMA device, where its sysfs shows, whether it can serve
//   cni/qos_changes.h       the QoS knobs: conflicts, write-ahead apply, check, restore, retry
//   cni/mover.h            the device into the pod and home again, next holders, release
//   cni/gid_waiter.h       the RoCE v2 GIDs of the pod's IPs
#include "cni/plugin.h"

#include <unistd.h>

#include <exception>
#include <optional>
#include <set>

#include "cni/crash_point.h"
#include "cni/device_resolver.h"
#include "cni/dra_attachment.h"
#include "cni/failure_code.h"
#include "cni/gid_waiter.h"
#include "cni/qos_settings.h"
#include "cni/log.h"
#include "cni/mover.h"
#include "cni/netconf.h"
#include "cni/qos_changes.h"
#include "rdmak8s/device_lookup.h"
#include "cni/spec.h"
#include "cni/state.h"
#include "rdmak8s/strings.h"
#include "rdmak8s/netns.h"

namespace rdmak8s::cni {

using nlohmann::json;

namespace {

// One command of one invocation, over the rooms that do its steps.
class Invocation {
 public:
  // `paths`: the node's, with the netconf's overrides when the node allows them.
  // `sysfs_as_is`: the sysfs root is a tree to read as is (a netconf override), not the node's.
  Invocation(const PluginOptions& o, CniEnv env, NetConf conf, const NodeConfig& paths,
             bool sysfs_as_is, Logger& log)
      : o_(o),
        env_(std::move(env)),
        conf_(std::move(conf)),
        log_(log),
        sysfs_root_(paths.sysfs_root),
        pod_devices_dir_(paths.pod_devices_dir),
        cdi_dir_(paths.cdi_dir),
        store_(paths.state_dir, [&log](const std::string& m) { log.Error(m); }),
        // The pod's view is the node's sysfs seen from the pod's netns: for the node's own sysfs
        // root, however it was named. Another root (a netconf override: a fixture tree) is read
        // as is.
        resolver_(o,
                  DeviceSelector{conf_.device_id, env_.ifname, conf_.port, conf_.pkey, env_.args,
                                 conf_.dra_request, paths.pod_devices_dir, paths.pod_resources_socket},
                  sysfs_root_,
                  sysfs_as_is ? nullptr : o.pod_sysfs, log, failure_),
        qos_changes_(o, store_, sysfs_root_, paths.configfs_root, conf_.qos, resolver_, log, failure_),
        mover_(o, store_, qos_changes_, resolver_, log, failure_),
        gids_(o, env_.ifname, resolver_, log, failure_) {}

  int code() const { return failure_.code(); }

  Status Add(json* result);
  Status Del();
  Status Check();
  Status Gc();
  Status StatusCmd();

 private:
  // The kernel's RDMA netns mode, read through `nl`; `code` when it can't be read or is not the
  // netconf's netnsMode.
  StatusOr<RdmaNetnsMode> NetnsMode(RdmaNetlink& nl, int code);

  const PluginOptions& o_;
  CniEnv env_;
  NetConf conf_;
  Logger& log_;
  std::string sysfs_root_;
  std::string pod_devices_dir_;  // the DRA records, and the attachment facts for the driver
  std::string cdi_dir_;          // claims' GID index specs (rdmak8s/claim_gid_spec.h)
  StateStore store_;
  FailureCode failure_;
  DeviceResolver resolver_;
  QosChanges qos_changes_;
  Mover mover_;
  GidWaiter gids_;
};

Status Invocation::Add(json* result) {
  if (!conf_.prev_result) {
    return failure_.Fail(kErrInvalidConfig,
                         InvalidArgumentError("rdmak8s is a chained plugin: ADD needs a prevResult "
                                              "(put it after the plugin that creates " +
                                              env_.ifname + ")"));
  }
  CniError cerr;
  auto converted = ConvertResult(*conf_.prev_result, conf_.cni_version, &cerr);
  if (!converted) return failure_.Fail(cerr.code, InvalidArgumentError(cerr.msg));

  auto pod = OpenNetns(env_.netns);
  if (!pod.ok()) {
    return failure_.Fail(
        pod.status().code() == StatusCode::kNotFound ? kErrUnknownContainer : kErrInvalidEnv,
        pod.status().Prepend("CNI_NETNS"));
  }
  // Checked before the state dir is touched: a node without RDMA is left exactly as it was.
  const std::string ib = sysfs_root_ + "/class/infiniband";
  if (access(ib.c_str(), F_OK) != 0) {
    return failure_.Fail(
        kErrDeviceNotFound,
        ErrnoError(errno, "no RDMA on this node (no RDMA core loaded: " + ib + ")"));
  }
  std::optional<StateStore::Lock> lock;
  if (auto l = store_.Acquire(); l.ok()) {
    lock.emplace(std::move(*l));
  } else {
    return failure_.Fail(kErrState, l.status());
  }

  auto usable = resolver_.ResolveUsable(*pod);
  if (!usable.ok()) return usable.status();
  const LookedUpDevice* dev = &usable->dev;
  const std::string& dev_name = dev->name;
  const std::vector<uint32_t>& ports = usable->ports;

  auto host_nl = OpenRdmaNetlink(o_, nullptr);
  if (!host_nl.ok()) return failure_.Fail(kErrWiring, host_nl.status().Prepend("open RDMA netlink"));
  auto mode = NetnsMode(**host_nl, kErrWiring);
  if (!mode.ok()) return mode.status();
  const std::string mode_name(RdmaNetnsModeName(*mode));

  AttachmentRecord rec;
  rec.network = conf_.name;
  rec.container_id = env_.container_id;
  rec.ifname = env_.ifname;
  rec.netns = env_.netns;
  rec.cni_version = conf_.cni_version;
  rec.rdma_dev = dev_name;
  rec.transport = std::string(TransportName(dev->transport));
  rec.netns_mode = mode_name;
  rec.ports = ports;
  log_.Info("device " + dev_name + " (" + rec.transport + ", " + mode_name + " mode)");

  bool need_move = false;
  if (*mode == RdmaNetnsMode::kExclusive) {
    RDMAK8S_RETURN_IF_ERROR(mover_.PlanExclusiveMove(&rec, *pod, &need_move));
  }

  std::unique_ptr<DcbNetlink> dcb;
  RDMAK8S_RETURN_IF_ERROR(qos_changes_.PlanQosSettings(&rec, *dev, &dcb));
  AddOutcome added;  // what the DRA driver's claim status gets (cni/dra_attachment.h)
  added.pkey = conf_.pkey;

  // Refuse a QoS conflict before anything is written or moved.
  RDMAK8S_RETURN_IF_ERROR(qos_changes_.CheckQosConflicts(rec));

  // Write-ahead record: from here on a crash leaves enough on disk for DEL/GC to undo.
  if (need_move) rec.moved = true;
  if (Status s = store_.Save(rec); !s.ok()) return failure_.Fail(kErrState, s);
  CrashPoint("add.record_saved");
  auto rollback = [&](Status cause) -> Status {
    int code = failure_.code();
    log_.Error("ADD failed, rolling back: " + cause.message());
    Status r = mover_.Release(rec);
    if (!r.ok()) log_.Error("rollback incomplete: " + r.message());
    failure_.set(code);
    return cause;
  };

  if (Status s = mover_.MoveIn(rec, **host_nl, *pod, need_move); !s.ok()) return rollback(s);
  CrashPoint("add.device_placed");

  // QoS after the move. Moving an RDMA device to another netns in exclusive mode unregisters
  // and re-registers it (rdma_dev_change_netns in drivers/infiniband/core/device.c:
  // disable_device ... enable_device_and_get), so every ib_client drops its per-device state and
  // makes a fresh one: rdma_cm's cma_remove_one/cma_add_one reset default_roce_tos to 0. The
  // rdma_cm configfs group (drivers/infiniband/core/cma_configfs.c) is not per-netns and finds
  // its cma_device by name on each access, so a write made now, from the node's netns, lands on
  // the re-registered device and stays; one made before the move was lost (CHECK then answered
  // 103). Node-wide knobs (DCB, ECN of the PF netdev) do not care, and go with them for one
  // write-ahead of originals and one rollback path.
  const size_t planned_knobs = rec.qos_settings.size();
  if (Status s = qos_changes_.ApplyQosSettings(&rec, dcb.get(), &*pod); !s.ok()) return rollback(s);
  // Unsupported knobs were dropped: record that (each save costs an fsync, so only then).
  if (rec.qos_settings.size() != planned_knobs) {
    if (Status s = store_.Save(rec); !s.ok()) return rollback(failure_.Fail(kErrState, s));
    CrashPoint("add.record_updated");
  }

  if (conf_.ensure_ipv6_gid) {
    if (Status s = gids_.EnsureIpv6(*pod); !s.ok()) {
      return rollback(failure_.Fail(kErrIo, s.Prepend("ensureIPv6Gid")));
    }
    CrashPoint("add.ipv6_enabled");
  }
  if (dev->transport == Transport::kRoce) {
    // Wait for the GIDs WITHOUT the node-wide lock: one pod whose GID never shows must not stall
    // every ADD/DEL/GC on the node for gidTimeoutMs. The record is on disk, so meanwhile other
    // invocations see this attachment as live (its device, its knobs); a DEL or GC may even
    // release it, which is why it is read back under the lock before deciding.
    lock.reset();
    Status waited = gids_.CheckGids(rec, *pod, ports, conf_.gid_timeout_ms, /*report=*/true, &added.gids);
    const int wait_code = failure_.code();
    auto relock = store_.Acquire();
    if (!relock.ok()) {  // no rollback without the lock: the record stays for DEL/GC
      return failure_.Fail(kErrState,
                           relock.status().Prepend("re-take the state lock after the GID wait"));
    }
    lock.emplace(std::move(*relock));
    CrashPoint("add.gids_waited");
    auto now = store_.Load(rec.network, rec.container_id, rec.ifname);
    if (!now.ok()) {
      if (now.status().code() == StatusCode::kNotFound) {
        return failure_.Fail(kErrWiring,
                             FailedPreconditionError("attachment " + rec.Key() +
                                                     " was released by a concurrent "
                                                     "DEL or GC while ADD waited for its GIDs"));
      }
      return rollback(failure_.Fail(kErrState, now.status()));
    }
    rec = std::move(*now);  // (a Release of another attachment may have handed it the move)
    if (!waited.ok()) {
      failure_.set(wait_code);
      return rollback(waited);
    }
  }

  // SPEC.md 1.1.0 lets a plugin fill in pciID of the interface it wired.
  if (CompareVersions(conf_.cni_version, "1.1.0") >= 0 && dev->parent.kind == ParentKind::kPci &&
      converted->contains("interfaces")) {
    for (auto& i : (*converted)["interfaces"]) {
      if (i.value("name", "") == env_.ifname && !i.value("sandbox", "").empty() &&
          !i.contains("pciID")) {
        i["pciID"] = dev->pci_address();
      }
    }
  }
  *result = std::move(*converted);
  // Informative only: the pod is wired whether or not the claim's status can say so.
  added.result = result;
  if (Status s = RecordDraAttachment({pod_devices_dir_, cdi_dir_}, env_.args, rec, added, log_);
      !s.ok()) {
    log_.Warning("DRA claim status: " + s.message());
  }
  CrashPoint("add.done");
  return Status::Ok();
}

Status Invocation::Del() {
  if (access(store_.dir().c_str(), F_OK) != 0 && errno == ENOENT) {
    log_.Info("no state dir " + store_.dir() + ": nothing was attached here");
    return Status::Ok();  // and don't create one: a DEL after a failed ADD leaves no trace
  }
  auto lock = store_.Acquire();
  if (!lock.ok()) return failure_.Fail(kErrState, lock.status());
  auto rec = store_.Load(conf_.name, env_.container_id, env_.ifname);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) {
      log_.Info("no attachment recorded: nothing to undo");
      // A retried DEL also retries knobs an earlier release could not restore.
      if (Status s = qos_changes_.RetryUnrestoredQosSettings(); !s.ok()) {
        log_.Warning("qos: retry of unrestored knobs: " + s.message());
      }
      return Status::Ok();
    }
    return failure_.Fail(kErrState, rec.status());
  }
  RDMAK8S_RETURN_IF_ERROR(mover_.Release(*rec));
  if (Status s = ForgetDraAttachment(pod_devices_dir_, *rec); !s.ok()) log_.Warning("DRA claim status: " + s.message());
  return Status::Ok();
}

Status Invocation::Check() {
  if (!conf_.prev_result) {
    return failure_.Fail(kErrInvalidConfig, InvalidArgumentError("CHECK needs a prevResult"));
  }
  CniError cerr;
  if (!ConvertResult(*conf_.prev_result, conf_.cni_version, &cerr)) {
    return failure_.Fail(cerr.code, InvalidArgumentError(cerr.msg));
  }
  auto pod = OpenNetns(env_.netns);
  if (!pod.ok()) return failure_.Fail(kErrUnknownContainer, pod.status().Prepend("CNI_NETNS"));
  auto lock = store_.Acquire();
  if (!lock.ok()) return failure_.Fail(kErrState, lock.status());
  auto rec = store_.Load(conf_.name, env_.container_id, env_.ifname);
  if (!rec.ok()) {
    return failure_.Fail(rec.status().code() == StatusCode::kNotFound ? kErrWiring : kErrState,
                         rec.status().Prepend("no record of this attachment"));
  }
  RDMAK8S_RETURN_IF_ERROR(mover_.CheckPlace(*rec, *pod));
  std::vector<uint32_t> ports;
  RDMAK8S_RETURN_IF_ERROR(resolver_.CheckStillUsable(*rec, *pod, &ports));
  if (rec->transport == "roce") RDMAK8S_RETURN_IF_ERROR(gids_.CheckGids(*rec, *pod, ports, 0, false));
  return qos_changes_.CheckQosSettings(*rec, &*pod);
}

Status Invocation::Gc() {
  if (access(store_.dir().c_str(), F_OK) != 0 && errno == ENOENT) return Status::Ok();
  auto lock = store_.Acquire();
  if (!lock.ok()) return failure_.Fail(kErrState, lock.status());
  auto recs = store_.List(conf_.name);
  if (!recs.ok()) return failure_.Fail(kErrState, recs.status());
  std::set<std::pair<std::string, std::string>> valid;
  for (const auto& a : conf_.valid_attachments) valid.insert({a.container_id, a.ifname});
  Status first;
  int first_code = 0;
  bool released = false;
  for (const auto& rec : *recs) {
    if (valid.count({rec.container_id, rec.ifname})) continue;
    log_.Info("GC: releasing stale attachment " + rec.Key());
    released = true;
    if (Status s = mover_.Release(rec); !s.ok() && first.ok()) {
      first = s.Prepend("GC " + rec.Key());
      first_code = failure_.code();
    } else if (Status f = ForgetDraAttachment(pod_devices_dir_, rec); !f.ok()) {
      log_.Warning("DRA claim status: " + f.message());
    }
  }
  if (!released) {  // (each Release already retried them)
    if (Status s = qos_changes_.RetryUnrestoredQosSettings(); !s.ok() && first.ok()) {
      first = s.Prepend("GC: knobs left unrestored earlier");
      first_code = failure_.code();
    }
  }
  if (!first.ok()) return failure_.Fail(first_code, first);
  return Status::Ok();
}

StatusOr<RdmaNetnsMode> Invocation::NetnsMode(RdmaNetlink& nl, int code) {
  auto mode = nl.GetNetnsMode();
  if (!mode.ok()) return failure_.Fail(code, mode.status().Prepend("read RDMA netns mode"));
  const std::string name(RdmaNetnsModeName(*mode));
  if (!conf_.netns_mode.empty() && conf_.netns_mode != name) {
    return failure_.Fail(
        code, FailedPreconditionError("netconf wants RDMA netns mode " + conf_.netns_mode +
                                      ", the kernel is in " + name + " mode"));
  }
  return *mode;
}

Status Invocation::StatusCmd() {
  const std::string ib = sysfs_root_ + "/class/infiniband";
  if (access(ib.c_str(), F_OK) != 0) {
    return failure_.Fail(kErrPluginNotAvailable,
                         ErrnoError(errno, "RDMA unavailable: no RDMA core (" + ib + ")"));
  }
  auto nl = OpenRdmaNetlink(o_, nullptr);
  if (!nl.ok()) return failure_.Fail(kErrPluginNotAvailable, nl.status().Prepend("RDMA netlink unavailable"));
  if (auto mode = NetnsMode(**nl, kErrPluginNotAvailable); !mode.ok()) return mode.status();
  if (!conf_.device_id.empty()) {
    auto r = resolver_.host_sysfs().ResolveDeviceId(conf_.device_id);
    // In exclusive mode a device in a pod is hidden from the node's sysfs, not gone.
    if (!r.ok() && (r.status().code() != StatusCode::kNotFound ||
                    !resolver_.host_sysfs().ResolveHiddenDeviceId(conf_.device_id).ok())) {
      return failure_.Fail(kErrPluginNotAvailable, r.status());
    }
  }
  return Status::Ok();
}

PluginOutput Run(const PluginOptions& options, const std::function<const char*(const char*)>& getenv,
                 std::string_view stdin_data) {
  Logger log;
  log.Configure(LogLevel::kInfo, "", options.stderr_fd);
  CniError err;
  const std::string peeked = PeekCniVersion(stdin_data);
  const std::string err_version = IsSupportedVersion(peeked) ? peeked : std::string(kLatestVersion);
  auto env = ParseEnv(getenv, &err);
  if (!env) {
    log.Error(err.msg);
    return {1, ErrorJson(err, err_version)};
  }
  // Host paths and the log destination are the node's: from its configuration file, never from
  // the netconf (a NAD is written by namespace users) unless that file allows it.
  NodeConfig node = options.node;
  if (!options.node_config_path.empty()) {
    auto loaded = LoadNodeConfig(options.node_config_path, options.node);
    if (!loaded.ok()) {
      CniError e{loaded.status().code() == StatusCode::kInvalidArgument ||
                         loaded.status().code() == StatusCode::kFailedPrecondition
                     ? kErrInvalidConfig
                     : kErrIo,
                 loaded.status().message(), ""};
      log.Error(e.msg);
      return {1, ErrorJson(e, err_version)};
    }
    node = std::move(*loaded);
  }
  // (after the node configuration: the installer's VERSION check then also checks that file)
  if (env->command == Command::kVersion) return {0, VersionJson(err_version)};
  log.Configure(node.log_level, node.log_file, options.stderr_fd);
  auto conf = ParseNetConf(stdin_data, env->command, &err);
  if (!conf) {
    log.Error(err.msg);
    return {1, ErrorJson(err, err_version)};
  }
  const std::string where = options.node_config_path.empty() ? std::string("the node configuration")
                                                             : options.node_config_path;
  auto resolved = PathsForInvocation(node, *conf, env->command, where);
  if (!resolved.ok()) {
    CniError e{kErrInvalidConfig, resolved.status().message(), ""};
    log.Error(e.msg);
    return {1, ErrorJson(e, err_version)};
  }
  const NodeConfig& paths = resolved->paths;
  if (!resolved->ignored.empty()) log.Warning(resolved->ignored);
  log.Configure(conf->log_level.value_or(node.log_level), paths.log_file, options.stderr_fd);
  log.SetContext(std::string(CommandName(env->command)) + " " + conf->name +
                 (env->container_id.empty() ? "" : " " + env->container_id + "/" + env->ifname));
  auto too_old = [&](std::string_view min) {
    CniError e{kErrIncompatibleVersion,
               "config version " + conf->cni_version + " does not allow " +
                   std::string(CommandName(env->command)) + " (needs " + std::string(min) + "+)",
               ""};
    log.Error(e.msg);
    return PluginOutput{1, ErrorJson(e, conf->cni_version)};
  };
  if (env->command == Command::kCheck && CompareVersions(conf->cni_version, "0.4.0") < 0) {
    return too_old("0.4.0");
  }
  if ((env->command == Command::kGc || env->command == Command::kStatus) &&
      CompareVersions(conf->cni_version, "1.1.0") < 0) {
    return too_old("1.1.0");
  }
  Invocation inv(options, *env, *conf, paths, resolved->sysfs_as_is, log);
  json result;
  Status s;
  switch (env->command) {
    case Command::kAdd: s = inv.Add(&result); break;
    case Command::kDel: s = inv.Del(); break;
    case Command::kCheck: s = inv.Check(); break;
    case Command::kGc: s = inv.Gc(); break;
    case Command::kStatus: s = inv.StatusCmd(); break;
    case Command::kVersion: break;
  }
  if (!s.ok()) {
    log.Error(s.message());
    return {1, ErrorJson({inv.code(), s.message(), std::string(StatusCodeName(s.code()))},
                         conf->cni_version)};
  }
  if (env->command == Command::kAdd) return {0, result.dump()};
  return {0, ""};
}

}  // namespace

PluginOutput RunPlugin(const PluginOptions& options,
                       const std::function<const char*(const char*)>& getenv,
                       std::string_view stdin_data) {
  try {
    return Run(options, getenv, stdin_data);
  } catch (const std::exception& e) {  // a library threw where we did not expect it
    return {1, ErrorJson({kErrIo, std::string("internal error: ") + e.what(), ""}, kLatestVersion)};
  }
}

}  // namespace rdmak8s::cni
