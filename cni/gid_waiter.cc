#include "cni/gid_waiter.h"

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "cni/spec.h"
#include "rdmak8s/base/strings.h"
#include "rdmak8s/device/gid_table.h"
#include "rdmak8s/device/roce_gid.h"

namespace rdmak8s::cni {

GidWaiter::GidWaiter(const PluginOptions& options, std::string ifname, DeviceResolver& resolver,
                     Logger& log, FailureCode& failure)
    : o_(options), ifname_(std::move(ifname)), resolver_(resolver), log_(log), failure_(failure) {}

Status GidWaiter::EnsureIpv6(const Netns& pod) {
  // /proc/sys/net resolves against the writing thread's netns.
  return RunInNetns(pod, [&]() -> Status {
    const std::string path = "/proc/sys/net/ipv6/conf/" + ifname_ + "/disable_ipv6";
    std::ofstream f(path);
    if (!f) return ErrnoError(errno, "open " + path);
    f << "0\n";
    f.flush();
    if (!f) return InternalError("write 0 to " + path);
    return Status::Ok();
  });
}

Status GidWaiter::CheckGids(const AttachmentRecord& rec, const Netns& pod,
                             const std::vector<uint32_t>& ports, int timeout_ms, bool report,
                             std::vector<FoundGid>* found_out) {
  auto route = OpenRouteNetlink(o_, &pod);
  if (!route.ok()) return failure_.Fail(kErrIo, route.status().Prepend("open rtnetlink in the pod"));
  auto link = (*route)->GetLinkByName(ifname_);
  if (!link.ok()) return failure_.Fail(kErrWiring, link.status().Prepend("pod interface for GIDs"));
  auto addrs = (*route)->ListAddresses(link->ifindex);
  if (!addrs.ok()) return failure_.Fail(kErrIo, addrs.status().Prepend("addresses of pod interface " + ifname_));
  std::map<std::string, std::string> wanted;  // gid -> ip
  for (const auto& a : *addrs) {
    std::string gid = GidForIp(a.address);
    if (!gid.empty()) wanted[gid] = a.address;
  }
  if (wanted.empty()) {
    log_.Warning("pod interface " + ifname_ + " has no IP: no GID to wait for");
    return Status::Ok();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // Each poll reads the table's filled prefix, where the kernel puts a GID it adds (first free
  // slot), not all of rxe's 1,024 slots. A wanted GID can also sit past a hole a freed GID left:
  // the whole table is read once the prefix stops changing (the kernel is done adding), and at
  // the deadline, before the GID is called missing.
  std::optional<uint64_t> last_free;   // sum of the ports' first free slots at the last poll
  std::optional<uint64_t> whole_at;    // ... when the whole tables were last read
  bool whole = false;
  for (;;) {
    const bool last = std::chrono::steady_clock::now() >= deadline;
    whole = whole || last;
    std::map<std::string, std::pair<uint32_t, uint32_t>> found;  // gid -> (port, GID index)
    uint64_t first_free = 0;
    Status s = resolver_.WithDeviceSysfs(rec, &pod, [&](const std::string& root) -> Status {
      for (auto port : ports) {
        std::set<std::string> rest;
        for (const auto& [gid, ip] : wanted) {
          if (!found.count(gid)) rest.insert(gid);
        }
        if (rest.empty()) break;
        RDMAK8S_ASSIGN_OR_RETURN(
            GidTable table, GidTable::Open(root + "/class/infiniband/" + rec.rdma_dev + "/ports/" +
                                           std::to_string(port)));
        RDMAK8S_ASSIGN_OR_RETURN(
            GidSearch hits, table.Search(rest, GidType::kRoceV2,
                                         whole ? GidScope::kWholeTable : GidScope::kFilledPrefix));
        for (const auto& [gid, index] : hits.found) found[gid] = {port, index};
        first_free += hits.first_free;
      }
      return Status::Ok();
    });
    if (!s.ok()) return failure_.Fail(kErrIo, s.Prepend("read GID table of " + rec.rdma_dev));
    std::vector<std::string> missing;
    for (const auto& [gid, ip] : wanted) {
      if (!found.count(gid)) missing.push_back(gid + " (" + ip + ")");
    }
    if (missing.empty()) {
      // The index a RoCE application passes as its GID index (ibv_modify_qp's sgid_index,
      // NCCL_IB_GID_INDEX, perftest -x): it varies per pod, so the log says which it is.
      for (const auto& [gid, where] : found) {
        if (found_out != nullptr) found_out->push_back({wanted[gid], gid, where.first, where.second});
        if (report) {
          log_.Info("RoCE v2 GID index " + std::to_string(where.second) + " for " + wanted[gid] +
                    " on " + rec.rdma_dev + " port " + std::to_string(where.first));
        }
      }
      return Status::Ok();
    }
    if (!whole) {
      // The same prefix twice and no whole read of it yet: what is missing is past a hole or
      // not coming; the deadline's pass reads it all anyway, so look now.
      const bool settled = last_free == first_free && whole_at != first_free;
      last_free = first_free;
      if (settled) {
        whole = true;
        continue;
      }
    } else if (!last) {
      whole = false;
      whole_at = last_free = first_free;
    }
    if (last && whole) {
      return failure_.Fail(
          kErrGidMissing,
          DeadlineExceededError("RoCE v2 GID " + Join(missing) + " not in the GID table of " +
                                rec.rdma_dev + " after " + std::to_string(timeout_ms) + " ms"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(o_.gid_poll_interval_ms));
  }
}

}  // namespace rdmak8s::cni
