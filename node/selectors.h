// Selectors: which RDMA devices an agent takes (a device-plugin pool's "selectors", the DRA
// driver's --devices), their schema and the match.
//
// Lists are OR within a selector; selectors present are ANDed. An absent selector matches all.
// ParseSelectors validates strictly (unknown keys, wrong types, bad values are kInvalidArgument
// naming the JSON path). Pure functions over values; no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::node {

struct Selectors {
  std::vector<std::string> vendors;       // lower-case hex, no 0x: "15b3"
  std::vector<std::string> device_ids;    // lower-case hex, no 0x: "101b"
  // The parent's driver ("mlx5_core", "ice", "bnxt_en") or the RDMA driver ("mlx5_ib",
  // "irdma", "bnxt_re"); "rxe", "siw" for soft devices. RdmaDevice::driver / rdma_driver.
  std::vector<std::string> drivers;
  std::vector<std::string> pci_addresses; // "0000:3b:00.0"
  std::vector<std::string> rdma_devices;  // "mlx5_0"
  std::vector<std::string> netdevs;       // "ens1f0"
  std::vector<std::string> link_types;    // "infiniband" | "ethernet"
  std::vector<std::string> transports;    // "ib" | "roce" | "iwarp"
  std::vector<int> numa_nodes;
  std::optional<bool> is_vf;
  std::vector<std::string> pf_names;      // netdev of the PF (a VF's PF, or the PF itself)
  friend bool operator==(const Selectors&, const Selectors&) = default;
};

// One selectors object (a pool's "selectors"); errors name the offending key under `path`
// ("$.selectors.vendors[0]: ..."). Also the DRA driver's --devices.
StatusOr<Selectors> ParseSelectors(const nlohmann::json& j, const std::string& path);

// `all` is the whole discovered set (needed for pfNames: a VF's PF netdevs).
bool SelectorsMatch(const Selectors& s, const RdmaDevice& dev, const std::vector<RdmaDevice>& all);

// "infiniband" | "ethernet" | "" from the first port's link_layer.
std::string LinkTypeKey(const RdmaDevice& dev);

}  // namespace rdmak8s::node
