#include "inspect.h"

#include <cstdio>
#include <sstream>

#include "rdmak8s/base/strings.h"

namespace rdmak8s::inspect {
namespace {

using nlohmann::json;

json OrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

std::string Hex(uint32_t v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%0*x", width, v);
  return buf;
}

}  // namespace

json DeviceToJson(const RdmaDevice& d) {
  json j;
  j["name"] = d.name;
  j["transport"] = std::string(TransportName(d.transport));
  j["node_type"] = std::string(NodeTypeName(d.node_type));
  j["node_guid"] = d.node_guid;
  j["driver"] = OrNull(d.driver);
  j["numa_node"] = d.numa_node();
  j["pci_address"] = OrNull(d.pci_address());
  j["parent_kind"] = std::string(ParentKindName(d.parent.kind));
  json chars = json::array();
  for (const CharDevice& c : d.char_devices) chars.push_back(c.ContainerPath());
  j["char_devices"] = chars;
  j["netdevs"] = d.netdevs;
  json ports = json::array();
  for (const Port& p : d.ports) {
    json jp;
    jp["port_num"] = p.port_num;
    jp["state"] = std::string(PortStateName(p.state));
    jp["phys_state"] = p.phys_state_name;
    jp["link_layer"] = p.link_layer;
    jp["rate"] = p.rate;
    json gids = json::array();
    for (const GidEntry& g : p.gids) {
      gids.push_back({{"index", g.index},
                      {"gid", g.gid},
                      {"type", std::string(GidTypeName(g.type))},
                      {"netdev", OrNull(g.netdev)}});
    }
    jp["gids"] = gids;
    ports.push_back(jp);
  }
  j["ports"] = ports;
  return j;
}

json DevicesToJson(const std::vector<RdmaDevice>& devices) {
  json arr = json::array();
  for (const RdmaDevice& d : devices) arr.push_back(DeviceToJson(d));
  return arr;
}

std::string FormatTable(const std::vector<RdmaDevice>& devices) {
  std::ostringstream o;
  for (const RdmaDevice& d : devices) {
    o << d.name << "  transport " << TransportName(d.transport);
    if (d.transport == Transport::kRoce) {
      o << " (" << (d.roce_v1 ? "v1" : "") << (d.roce_v1 && d.roce_v2 ? "+" : "")
        << (d.roce_v2 ? "v2" : "") << ")";
    }
    o << "  node " << NodeTypeName(d.node_type) << "  driver "
      << (d.driver.empty() ? "-" : d.driver) << "  guid " << d.node_guid;
    if (!d.fw_ver.empty()) o << "  fw " << d.fw_ver;
    if (!d.hca_type.empty()) o << "  hca " << d.hca_type;
    o << "\n";
    o << "  parent   " << ParentKindName(d.parent.kind);
    if (d.parent.kind == ParentKind::kAuxiliary) o << " " << d.parent.aux_name << " on";
    if (d.parent.pci) {
      const PciInfo& pci = *d.parent.pci;
      o << " " << pci.address << " [" << Hex(pci.vendor_id, 4) << ":" << Hex(pci.device_id, 4)
        << "]  NUMA " << pci.numa_node;
      if (pci.is_vf) o << "  VF " << pci.vf_index << " of " << pci.pf_address;
      if (pci.sriov_totalvfs > 0) {
        o << "  SR-IOV " << pci.sriov_numvfs << "/" << pci.sriov_totalvfs << " VFs";
      }
      o << "\n  pcie     " << Join(pci.pcie_path, " > ");
    }
    if (d.parent.kind == ParentKind::kVirtual && !d.parent.lower_netdev.empty()) {
      o << " on netdev " << d.parent.lower_netdev;
    }
    o << "\n";
    std::vector<std::string> chars;
    for (const CharDevice& c : d.char_devices) {
      chars.push_back(c.ContainerPath() + " (" + std::to_string(c.major) + ":" +
                      std::to_string(c.minor) + ")");
    }
    o << "  chardevs " << (chars.empty() ? "-" : Join(chars, ", ")) << "\n";
    if (d.verbs) {
      o << "  verbs    max_qp " << d.verbs->max_qp << "  max_cq " << d.verbs->max_cq
        << "  max_mr " << d.verbs->max_mr << "  max_pd " << d.verbs->max_pd << "\n";
    }
    for (const Port& p : d.ports) {
      o << "  port " << p.port_num << "   " << PortStateName(p.state) << "  "
        << (p.phys_state_name.empty() ? "-" : p.phys_state_name) << "  " << p.link_layer << "  "
        << (p.rate.empty() ? "-" : p.rate);
      if (p.lid) o << "  lid 0x" << Hex(*p.lid, 1);
      if (p.sm_lid) o << "  sm_lid 0x" << Hex(*p.sm_lid, 1);
      if (p.lmc) o << "  lmc " << *p.lmc;
      o << "\n";
      o << "           netdevs " << (p.netdevs.empty() ? "-" : Join(p.netdevs, ", ")) << "\n";
      if (!p.pkeys.empty()) {
        std::vector<std::string> pk;
        for (uint16_t k : p.pkeys) pk.push_back("0x" + Hex(k, 4));
        o << "           pkeys   " << Join(pk, " ") << "\n";
      }
      for (const GidEntry& g : p.gids) {
        char idx[8];
        std::snprintf(idx, sizeof(idx), "%3u", g.index);
        o << "           GID " << idx << "  " << g.gid << "  " << GidTypeName(g.type);
        if (!g.netdev.empty()) o << "  " << g.netdev;
        o << "\n";
      }
    }
    o << "\n";
  }
  return o.str();
}

int Run(const Options& options, Discovery& discovery, std::ostream& out, std::ostream& err) {
  StatusOr<DiscoveryResult> result = discovery.DiscoverAll();
  if (!result.ok()) {
    err << "rdmak8s-inspect: " << result.status().ToString() << "\n";
    return kExitError;
  }
  if (!result->rdma_present) {
    std::string msg = "No RDMA on this host: " + options.sysfs_root +
                      "/class/infiniband does not exist (no RDMA driver loaded).";
    if (options.json) {
      out << "[]\n";
      err << msg << "\n";
    } else {
      out << msg << "\n";
    }
    return kExitOk;
  }
  if (options.json) {
    out << DevicesToJson(result->devices).dump(2) << "\n";
  } else if (result->devices.empty() && result->failures.empty()) {
    out << "RDMA core loaded (" << options.sysfs_root
        << "/class/infiniband exists) but no RDMA device is registered.\n";
  } else {
    out << FormatTable(result->devices);
  }
  for (const DeviceFailure& f : result->failures) {
    err << "rdmak8s-inspect: " << (f.rdma_dev.empty() ? std::string() : f.rdma_dev + ": ")
        << f.status.ToString() << "\n";
  }
  return result->failures.empty() ? kExitOk : kExitPartial;
}

}  // namespace rdmak8s::inspect
