// Device models built in code for unit tests of the device plugin's pure pieces (the
// integration tests use SysfsDiscovery on the fixture trees instead).
#pragma once

#include <string>
#include <vector>

#include "rdmak8s/device/device.h"

namespace rdmak8s::dp::testdev {

inline CharDevice Char(CharDeviceKind kind, std::string name, uint32_t port = 0) {
  CharDevice c;
  c.kind = kind;
  c.name = std::move(name);
  c.port_num = port;
  return c;
}

inline Port ActivePort(uint32_t num, std::string link_layer, std::vector<std::string> netdevs = {}) {
  Port p;
  p.port_num = num;
  p.state = PortState::kActive;
  p.phys_state = 5;
  p.phys_state_name = "LinkUp";
  p.link_layer = std::move(link_layer);
  p.netdevs = std::move(netdevs);
  return p;
}

inline RdmaDevice Pci(std::string name, std::string bdf, int numa, std::vector<std::string> path,
                      uint16_t vendor = 0x15b3, uint16_t device = 0x101b) {
  RdmaDevice d;
  d.name = std::move(name);
  d.driver = "mlx5_core";
  d.rdma_driver = "mlx5_ib";
  PciInfo pci;
  pci.address = bdf;
  pci.vendor_id = vendor;
  pci.device_id = device;
  pci.numa_node = numa;
  pci.pcie_path = std::move(path);
  pci.pcie_path.push_back(bdf);
  d.parent.kind = ParentKind::kPci;
  d.parent.pci = pci;
  return d;
}

// IB HCA with uverbs<n>, umad<n>/issm<n> on port 1, and rdma_cm.
inline RdmaDevice Ib(std::string name, int n, std::string bdf = "0000:3b:00.0", int numa = 0,
                     std::vector<std::string> path = {"0000:3a:00.0"}) {
  RdmaDevice d = Pci(std::move(name), std::move(bdf), numa, std::move(path));
  d.node_type = NodeType::kCa;
  d.transport = Transport::kIb;
  d.ports.push_back(ActivePort(1, "InfiniBand", {}));
  std::string s = std::to_string(n);
  d.char_devices = {Char(CharDeviceKind::kUverbs, "uverbs" + s),
                    Char(CharDeviceKind::kUmad, "umad" + s, 1),
                    Char(CharDeviceKind::kIssm, "issm" + s, 1),
                    Char(CharDeviceKind::kRdmaCm, "rdma_cm")};
  return d;
}

inline RdmaDevice Roce(std::string name, int n, std::string netdev, std::string bdf = "0000:5e:00.0",
                       int numa = 1, std::vector<std::string> path = {"0000:5d:00.0"}) {
  RdmaDevice d = Pci(std::move(name), std::move(bdf), numa, std::move(path));
  d.node_type = NodeType::kCa;
  d.transport = Transport::kRoce;
  d.ports.push_back(ActivePort(1, "Ethernet", {netdev}));
  d.netdevs = {netdev};
  std::string s = std::to_string(n);
  d.char_devices = {Char(CharDeviceKind::kUverbs, "uverbs" + s),
                    Char(CharDeviceKind::kUmad, "umad" + s, 1),
                    Char(CharDeviceKind::kIssm, "issm" + s, 1),
                    Char(CharDeviceKind::kRdmaCm, "rdma_cm")};
  return d;
}

inline RdmaDevice Iwarp(std::string name, int n, std::string netdev, std::string bdf = "0000:81:00.0",
                        int numa = 1) {
  RdmaDevice d = Pci(std::move(name), std::move(bdf), numa, {"0000:80:01.0"}, 0x8086, 0x1593);
  d.driver = "ice";
  d.rdma_driver = "irdma";
  d.node_type = NodeType::kRnic;
  d.transport = Transport::kIwarp;
  d.ports.push_back(ActivePort(1, "Ethernet", {netdev}));
  d.netdevs = {netdev};
  d.char_devices = {Char(CharDeviceKind::kUverbs, "uverbs" + std::to_string(n)),
                    Char(CharDeviceKind::kRdmaCm, "rdma_cm")};
  return d;
}

}  // namespace rdmak8s::dp::testdev
