// What rdmak8s-inspect check judges the node against: the device plugin's config file and the
// NADs' rdmak8s netconfs (or just their `qos` blocks), parsed by the very parsers the device
// plugin (dp::ParseConfig) and the CNI (cni::ParseNetConf) use, plus the few node settings only
// the check has (container runtimes, memlock, hugepages, PFC priorities allowed besides RoCE's).
//
// Plain values; the loaders read files and return kInvalidArgument naming the input that is
// wrong (its flag and the parser's message), kNotFound / the errno for an unreadable file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cni/netconf.h"
#include "device-plugin/config/config.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::inspect {

struct HugepageNeed {
  uint64_t size_kb = 0;  // 2048 for 2M pages: /sys/kernel/mm/hugepages/hugepages-<size_kb>kB
  uint64_t count = 0;    // nr_hugepages at least this
};

// --fabric-mtu: the netdev MTU the RoCE fabric runs at, the same on every node. A node cannot see
// its peers' MTU (a port whose netdev MTU is lower than the peer's gets a smaller RDMA MTU, and
// traffic between them runs at, or drops frames above, the smaller one), so the admin declares it.
struct FabricMtu {
  std::optional<uint32_t> all;                  // "--fabric-mtu 9000": every RoCE port's netdev
  std::map<std::string, uint32_t> by_netdev;    // "--fabric-mtu ens1f0np0=9000": that netdev
  // The MTU expected of `netdev` (its own entry, else `all`); nullopt: nothing declared.
  std::optional<uint32_t> For(const std::string& netdev) const;
};

struct CheckPolicy {
  std::optional<dp::PluginConfig> plugin_config;  // --config
  std::vector<cni::NetConf> netconfs;             // --qos / --qos-file, in the order given
  std::set<uint8_t> allow_pfc;                    // --allow-pfc: PFC may be on there too
  // --runtime: executables' file names, or whole paths ("/opt/bin/containerd"), of the runtime
  // processes in /proc (root's only: check_node.h)
  std::vector<std::string> runtimes = {"containerd", "crio"};
  std::optional<uint64_t> memlock_min_bytes;      // nullopt: RLIMIT_MEMLOCK must be unlimited
  std::vector<HugepageNeed> hugepages;            // --hugepages
  FabricMtu fabric_mtu;                           // --fabric-mtu
};

// One --qos argument (or a --qos-file's content): either a whole rdmak8s netconf (an object with
// "cniVersion", as in a NAD's config; its pkey and netnsMode count too) or a bare `qos` block,
// which is wrapped into a minimal netconf named `bare_name` (how messages name it: "qos-2") so
// that cni::ParseNetConf validates it. kInvalidArgument with the CNI's message when not valid.
StatusOr<cni::NetConf> ParseQosArg(const std::string& text, const std::string& bare_name = "qos");

// --hugepages "<size>=<count>": size 2M, 1G, 2048kB (or plain kB); kInvalidArgument otherwise.
StatusOr<HugepageNeed> ParseHugepageNeed(const std::string& text);

// One --fabric-mtu "[<netdev>=]<mtu>" added to `into`: mtu 68..65535 (the kernel's range for an
// Ethernet netdev carrying IPv4); kInvalidArgument naming the argument otherwise, or when it gives
// a second value for the same netdev (or a second bare one).
Status ParseFabricMtu(const std::string& text, FabricMtu& into);

// What the policy asks of RoCE, merged over every netconf's qos block.
struct RoceIntent {
  bool any = false;                         // some qos block was given
  std::set<std::string> trusts;             // qos.trust values ("dscp", "pcp")
  std::set<uint8_t> dscps;                  // DSCP of each roceTos / trafficClass (ToS >> 2)
  std::map<uint8_t, uint8_t> dscp_to_priority;  // qos.dscpToPriority, merged
  std::vector<std::string> map_conflicts;   // "DSCP 26 -> 3 (a) and -> 4 (b)"
  std::set<uint8_t> pfc;                    // qos.pfc
  std::set<uint8_t> ecn;                    // qos.ecn
};
RoceIntent RoceIntentOf(const CheckPolicy& policy);

// PKeys the netconfs name (without the full-member bit 0x8000), sorted.
std::set<uint16_t> PkeysNeeded(const CheckPolicy& policy);

}  // namespace rdmak8s::inspect
