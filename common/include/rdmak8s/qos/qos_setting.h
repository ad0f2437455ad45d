// One QoS setting on the node, typed: a struct per kind of setting a QoS policy (qos_policy.h)
// can need, each with its key (the id the CNI's records and knobs.json store, cni/state.h), the
// values it takes, and how it is read and written where it lives. The one table of these
// settings: the CNI applies and restores them (cni/qos_settings.h, cni/qos_changes.h), the node
// check reads them (inspect/check_roce.cc); neither spells a key or a path of its own.
//
//   kind   key                     value                 where (read and written)
//   trust  trust:<pf>              "dscp" | "pcp"        DCB IEEE APP trust table (dcbnl)
//   pfc    pfc:<pf>:<prio>         "on" | "off"          DCB IEEE PFC enable bit of <prio>
//   app    app:<pf>:<dscp>         "<prio>" | "none"     DCB IEEE APP entry, selector 5 (DSCP)
//   ecn    ecn:<pf>:<rp|np>:<prio> "1" | "0"             <sysfs>/class/net/<pf>/ecn/roce_<rp|np>/enable/<prio> (mlx5)
//   tos    tos:<rdma_dev>:<port>   "<0..255>"            <configfs>/rdma_cm/<rdma_dev>/ports/<port>/default_roce_tos
//   tc     tc:<rdma_dev>:<port>    "<0..255>"            <dev sysfs>/class/infiniband/<rdma_dev>/tc/<port>/traffic_class
// trust, pfc, app and ecn are node-wide (their object is the PF netdev); tos and tc belong to
// the RDMA device. Keys are stored on disk by releases old and new: their format never changes.
//
// Read and Write return kUnimplemented when this driver/kernel has no such setting (no DCB
// netlink handle, no dcbnl ops, no trust table, no ecn directory, rdma_cm configfs not mounted,
// no tc attribute); DCB netlink's kNotFound for a PF netdev that does not exist. Files are
// opened beneath their root (sysfs or configfs): a link out of it fails. Not thread safe (one
// DCB handle).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/dcb_netlink.h"
#include "rdmak8s/qos/qos_policy.h"

namespace rdmak8s {

// Where settings are read and written.
struct QosSettingContext {
  DcbNetlink* dcb = nullptr;     // null: DCB settings unsupported
  std::string sysfs_root;        // host sysfs: ECN settings of the PF netdev
  std::string dev_sysfs_root;    // sysfs where the RDMA device is visible now: tc settings
  std::string configfs_root;     // rdma_cm configfs
};

struct TrustSetting {
  std::string pf;
};
struct PfcSetting {
  std::string pf;
  uint8_t priority = 0;  // 0..7
};
struct AppSetting {
  std::string pf;
  uint8_t dscp = 0;  // 0..63
};
// The reaction point (the sender that slows down) or the notification point (the receiver that
// sends CNPs).
enum class EcnPoint { kRp, kNp };
struct EcnSetting {
  std::string pf;
  EcnPoint point = EcnPoint::kRp;
  uint8_t priority = 0;  // 0..7
};
struct TosSetting {
  std::string rdma_dev;
  uint32_t port = 1;
};
struct TcSetting {
  std::string rdma_dev;
  uint32_t port = 1;
};

class QosSetting {
 public:
  using Kind = std::variant<TrustSetting, PfcSetting, AppSetting, EcnSetting, TosSetting, TcSetting>;

  // From any kind's struct (or a Kind): `QosSetting s = PfcSetting{"pf0", 3};`.
  template <class S, class = std::enable_if_t<std::is_constructible_v<Kind, S&&>>>
  QosSetting(S&& setting) : kind_(std::forward<S>(setting)) {}  // NOLINT(google-explicit-constructor)

  // The setting a key names: kInvalidArgument "QoS setting key \"<key>\": <why>" for an unknown
  // kind, a wrong number of parts, an empty name or a number out of range.
  static StatusOr<QosSetting> FromKey(std::string_view key);
  std::string Key() const;

  const Kind& kind() const { return kind_; }
  // Its object is the node's PF netdev (trust, pfc, app, ecn), not the RDMA device (tos, tc).
  bool node_wide() const;
  // Read and written through DCB netlink (trust, pfc, app).
  bool dcb() const;
  // The RDMA device of a setting read and written in that device's sysfs, wherever the device
  // shows now (tc); empty for the others.
  std::string sysfs_device() const;

  // The file a setting lives in (ecn, tos, tc), under the context's root; "" for DCB settings.
  std::string FilePath(const QosSettingContext& ctx) const;

  // The current value ("off" for a PFC bit that is clear, "none" for a missing APP entry).
  StatusOr<std::string> Read(const QosSettingContext& ctx) const;
  // `value` as Read gives it (for app, an invalid priority is kInvalidArgument).
  Status Write(const QosSettingContext& ctx, const std::string& value) const;

 private:
  Kind kind_;
};

// The settings `qos` asks for, with their values: node-wide ones on `pf_netdev` (none when it is
// empty: no PF found), device ones on each of `rdma_dev`'s `ports`.
std::vector<std::pair<QosSetting, std::string>> QosSettingsFor(const QosPolicy& qos,
                                                               const std::string& pf_netdev,
                                                               const std::string& rdma_dev,
                                                               const std::vector<uint32_t>& ports);

}  // namespace rdmak8s
