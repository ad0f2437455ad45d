// rdmak8s-inspect as a library: renders what discovery finds as a table for operators or as
// JSON (issue 2: one object per device with name, transport, node_type, node_guid, driver,
// numa_node, pci_address, parent_kind, char_devices, netdevs, ports[port_num, state, phys_state,
// link_layer, rate, gids[index, gid, type, netdev]]).
//
// Absent values are JSON null (pci_address of a soft device, netdev of an IB GID); numa_node is
// -1 when unknown, as the kernel says.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmak8s/device/device.h"
#include "rdmak8s/discovery/discovery.h"

namespace rdmak8s::inspect {

nlohmann::json DeviceToJson(const RdmaDevice& d);
// A JSON array, one object per device, in discovery order.
nlohmann::json DevicesToJson(const std::vector<RdmaDevice>& devices);
// The readable table: one block per device, one line per port and GID.
std::string FormatTable(const std::vector<RdmaDevice>& devices);

struct Options {
  std::string sysfs_root = "/sys";
  bool json = false;
};

// Exit codes of rdmak8s-inspect.
inline constexpr int kExitOk = 0;           // devices listed, or plainly no RDMA on this host
inline constexpr int kExitPartial = 1;      // some devices could not be read (listed on stderr)
inline constexpr int kExitError = 2;        // the tree could not be read at all

// Runs `discovery` and writes the report to `out` and errors (each naming its path) to `err`.
// Without RDMA it says so (on `out` for the table; `[]` on `out` and the note on `err` with
// --json, so stdout stays valid JSON) and returns kExitOk.
int Run(const Options& options, Discovery& discovery, std::ostream& out, std::ostream& err);

}  // namespace rdmak8s::inspect
