// Fuzz target: the CNI network configuration as a runtime passes it on stdin (cni/netconf.h),
// for every command, and the conversion of its prevResult to every supported spec version
// (cni/spec.h ConvertResult). Input: the stdin bytes.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal carries a spec error code the header promises (1, 6 or 7) and a message;
//   - PeekCniVersion agrees with the parsed cniVersion;
//   - a parsed netconf serialised (its raw JSON) parses again to the same values;
//   - DEL is at least as permissive as ADD (SPEC.md: DEL must not fail on what it does not need);
//   - a prevResult converts to every version or to none (malformed is malformed in any version).
#include <cstring>

#include "cni/netconf.h"
#include "cni/spec.h"
#include "fuzz/fuzz_check.h"

namespace rdmak8s::cni {
namespace {

constexpr Command kCommands[] = {Command::kAdd, Command::kDel, Command::kCheck, Command::kGc,
                                 Command::kStatus, Command::kVersion};

bool SameQos(const QosPolicy& a, const QosPolicy& b) {
  return a.trust == b.trust && a.pfc == b.pfc && a.dscp_to_priority == b.dscp_to_priority &&
         a.ecn == b.ecn && a.roce_tos == b.roce_tos && a.traffic_class == b.traffic_class &&
         a.strict == b.strict;
}

bool SameNetConf(const NetConf& a, const NetConf& b) {
  bool same_va = a.valid_attachments.size() == b.valid_attachments.size();
  for (size_t i = 0; same_va && i < a.valid_attachments.size(); ++i) {
    same_va = a.valid_attachments[i].container_id == b.valid_attachments[i].container_id &&
              a.valid_attachments[i].ifname == b.valid_attachments[i].ifname;
  }
  return a.cni_version == b.cni_version && a.name == b.name && a.type == b.type &&
         a.device_id == b.device_id && a.port == b.port && a.gid_timeout_ms == b.gid_timeout_ms &&
         a.ensure_ipv6_gid == b.ensure_ipv6_gid && a.pkey == b.pkey &&
         a.netns_mode == b.netns_mode && SameQos(a.qos, b.qos) && a.sysfs_root == b.sysfs_root &&
         a.configfs_root == b.configfs_root && a.state_dir == b.state_dir &&
         a.log_file == b.log_file && a.log_level == b.log_level &&
         a.prev_result == b.prev_result && same_va && a.raw == b.raw;
}

void CheckPrevResultConverts(const nlohmann::json& prev) {
  int converted = 0;
  for (std::string_view v : kSupportedVersions) {
    CniError err;
    auto out = ConvertResult(prev, v, &err);
    if (out) {
      ++converted;
      FUZZ_CHECK((*out)["cniVersion"] == std::string(v), out->dump());
    } else {
      FUZZ_CHECK(err.code == kErrInvalidConfig && !err.msg.empty(), err.msg);
    }
  }
  FUZZ_CHECK(converted == 0 || converted == static_cast<int>(kSupportedVersions.size()),
             prev.dump());
}

}  // namespace
}  // namespace rdmak8s::cni

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmak8s::cni;
  const std::string_view text = rdmak8s::fuzz::AsText(data, size);
  const std::string peeked = PeekCniVersion(text);
  bool add_ok = false;
  for (Command c : kCommands) {
    CniError err;
    std::optional<NetConf> conf = ParseNetConf(text, c, &err);
    if (!conf) {
      FUZZ_CHECK(err.code == kErrIncompatibleVersion || err.code == kErrDecode ||
                     err.code == kErrInvalidConfig,
                 std::to_string(err.code) + " " + err.msg);
      FUZZ_CHECK(!err.msg.empty(), std::string(CommandName(c)));
      FUZZ_CHECK(!(c == Command::kDel && add_ok), "DEL refused what ADD took: " + err.msg);
      continue;
    }
    if (c == Command::kAdd) add_ok = true;
    FUZZ_CHECK(conf->cni_version == peeked, conf->cni_version + " vs " + peeked);
    FUZZ_CHECK(IsSupportedVersion(conf->cni_version), conf->cni_version);
    FUZZ_CHECK(ValidNetworkName(conf->name), conf->name);
    if (conf->pkey) FUZZ_CHECK((*conf->pkey & 0x7fff) != 0, std::to_string(*conf->pkey));

    // Serialise and parse again: the same values (the runtime may hand a plugin's config on).
    CniError again_err;
    std::optional<NetConf> again = ParseNetConf(conf->raw.dump(), c, &again_err);
    FUZZ_CHECK(again.has_value(), again_err.msg);
    FUZZ_CHECK(SameNetConf(*conf, *again), conf->raw.dump());

    if (conf->prev_result) CheckPrevResultConverts(*conf->prev_result);
    // What the plugin does with it: an error object in the config's version.
    (void)ErrorJson(CniError{kErrInvalidConfig, "m", "d"}, conf->cni_version);
    (void)VersionJson(conf->cni_version);
  }
  return 0;
}
