// The attachment facts the CNI leaves for the DRA driver (cni/dra_attachment.h).
#include "cni/dra_attachment.h"

#include <algorithm>

#include "cni/spec.h"
#include "rdmak8s/records/claim_gid_spec.h"

namespace rdmak8s::cni {

namespace {

using nlohmann::json;

// The result's interface index of CNI_IFNAME in the sandbox; -1 when not listed.
int PodInterface(const json& result, const std::string& ifname) {
  if (!result.contains("interfaces") || !result["interfaces"].is_array()) return -1;
  const json& list = result["interfaces"];
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].is_object() && list[i].value("name", "") == ifname && !list[i].value("sandbox", "").empty()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

std::vector<AttachmentFacts> DraAttachmentFacts(const std::vector<PodClaimRecord>& records,
                                                const AttachmentRecord& rec, const AddOutcome& add) {
  AttachmentFacts base;
  base.rdma_dev = rec.rdma_dev;
  base.network = rec.network;
  base.container_id = rec.container_id;
  base.ifname = rec.ifname;
  base.ports = rec.ports;
  base.pkey = add.pkey;
  for (const auto& [id, value] : rec.qos_settings) {
    std::string name = id.substr(0, id.find(':'));
    if (std::find(base.qos.begin(), base.qos.end(), name) == base.qos.end() &&
        base.qos.size() < kMaxAttachmentQosSettings) {
      base.qos.push_back(std::move(name));
    }
  }
  if (add.result != nullptr && add.result->is_object()) {
    const json& result = *add.result;
    const int pod_if = PodInterface(result, rec.ifname);
    if (pod_if >= 0) {
      const json& i = result["interfaces"][static_cast<size_t>(pod_if)];
      if (i.contains("mac") && i["mac"].is_string()) base.hardware_address = i["mac"].get<std::string>();
    }
    if (result.contains("ips") && result["ips"].is_array()) {
      for (const auto& ip : result["ips"]) {
        if (!ip.is_object() || !ip.contains("address") || !ip["address"].is_string()) continue;
        if (pod_if >= 0 && ip.contains("interface") && ip["interface"] != pod_if) continue;
        std::optional<std::string> cidr = CanonicalInterfaceAddress(ip["address"].get<std::string>());
        if (cidr && base.ips.size() < kMaxAttachmentIps) base.ips.push_back(*cidr);
      }
    }
  }
  // The GID of the first address (the one RoCE applications usually bind), else any found.
  for (const auto& g : add.gids) {
    const bool first = !base.ips.empty() && base.ips[0].substr(0, base.ips[0].find('/')) == g.ip;
    if (base.gid.empty() || first) {
      base.gid = g.gid;
      base.gid_index = g.index;
    }
  }
  std::vector<AttachmentFacts> out;
  for (const auto& r : records) {
    for (const auto& d : r.devices) {
      if (d.rdma_dev != rec.rdma_dev) continue;
      AttachmentFacts f = base;
      f.claim_uid = r.claim_uid;
      f.driver = d.driver;
      f.device = d.device;
      out.push_back(std::move(f));
    }
  }
  return out;
}

Status RecordDraAttachment(const DraPaths& paths, const std::string& cni_args,
                           const AttachmentRecord& rec, const AddOutcome& add, Logger& log) {
  const std::string& pod_devices_dir = paths.pod_devices_dir;
  StatusOr<std::string> uid = CniArg(cni_args, "K8S_POD_UID");
  if (!uid.ok()) return Status::Ok();  // no pod UID: no claims to tell about
  StatusOr<std::vector<PodClaimRecord>> records = ReadPodClaimRecords(pod_devices_dir, *uid);
  if (!records.ok()) {
    if (records.status().code() == StatusCode::kNotFound) return Status::Ok();  // not a DRA pod
    return records.status().Prepend("attachment facts for the DRA driver");
  }
  const std::vector<AttachmentFacts> facts = DraAttachmentFacts(*records, rec, add);
  for (const auto& f : facts) RDMAK8S_RETURN_IF_ERROR(WriteAttachmentFacts(pod_devices_dir, f));
  // The runtime reads the claim's CDI specs at CreateContainer, after this ADD (docs/dra.md,
  // "How a container learns its GID index").
  for (const auto& f : facts) {
    if (!f.gid_index) continue;
    const std::string what = "claim " + f.claim_uid + " device " + f.device;
    StatusOr<bool> set = SetClaimGidIndex(paths.cdi_dir, f.driver, f.claim_uid, f.device, *f.gid_index);
    if (!set.ok()) return set.status().Prepend(what);
    if (*set) {
      log.Info(what + ": containers get GID index " + std::to_string(*f.gid_index));
    } else {
      log.Debug(what + ": no GID index spec (not asked for, or the claim has several pods)");
    }
  }
  return Status::Ok();
}

Status ForgetDraAttachment(const std::string& pod_devices_dir, const AttachmentRecord& rec) {
  return RemoveAttachmentFacts(pod_devices_dir, rec.network, rec.container_id, rec.ifname);
}

}  // namespace rdmak8s::cni
