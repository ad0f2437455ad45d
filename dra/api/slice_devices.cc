#include "dra/api/slice_devices.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "rdmak8s/base/strings.h"
#include "rdmak8s/device/device_id.h"

namespace rdmak8s::dra {
namespace {

std::string Hex4(uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

std::string_view FunctionName(const RdmaDevice& d) {
  switch (d.parent.kind) {
    case ParentKind::kPci: return d.parent.pci && d.parent.pci->is_vf ? "vf" : "pf";
    case ParentKind::kAuxiliary: return "sf";
    case ParentKind::kVirtual: return "soft";
    case ParentKind::kUnknown: break;
  }
  return "unknown";
}

class AttributeSet {
 public:
  AttributeSet(std::map<std::string, AttributeValue>& out, std::vector<std::string>& notes,
               std::string_view device)
      : out_(out), notes_(notes), device_(device) {}
  void Int(const std::string& name, int64_t v) { out_[name] = v; }
  void Note(const std::string& what) { notes_.push_back(std::string(device_) + ": " + what); }
  void Bool(const std::string& name, bool v) { out_[name] = v; }
  void String(const std::string& name, const std::string& v) {
    if (v.empty()) return;
    if (v.size() > kMaxAttributeValueLength) {
      notes_.push_back(std::string(device_) + ": attribute " + name + " left out: value of " +
                       std::to_string(v.size()) + " characters (the API allows " +
                       std::to_string(kMaxAttributeValueLength) + ")");
      return;
    }
    out_[name] = v;
  }

 private:
  std::map<std::string, AttributeValue>& out_;
  std::vector<std::string>& notes_;
  std::string_view device_;
};

// The device ID Multus hands the delegate CNI for a claimed device (k8s.cni.cncf.io/deviceID), in
// the form the delegates take it: a PF's or VF's PCI address (sriov-cni, host-device), an SF's
// auxiliary device name (as sriov-network-device-plugin gives SFs), a soft device's RDMA device
// name (only our CNI attaches one).
std::string MultusDeviceId(const RdmaDevice& d) {
  switch (d.parent.kind) {
    case ParentKind::kPci: return d.parent.pci ? d.parent.pci->address : d.name;
    case ParentKind::kAuxiliary: return d.parent.aux_name;
    case ParentKind::kVirtual:
    case ParentKind::kUnknown: break;
  }
  return d.name;
}

void AddAttributes(const DeviceInput& in, const std::vector<DeviceInput>& all,
                   const SliceDeviceOptions& options, AttributeSet& a) {
  const RdmaDevice& d = in.device;
  const std::string std_prefix = kStandardPrefix;
  if (d.parent.pci) {
    a.String(std_prefix + "pcieRoot", d.parent.pci->pcie_root);
    if (d.parent.pci->pcie_root.empty()) {
      a.Note("no pcieRoot attribute: the sysfs path of " + d.parent.pci->address +
             " shows no pci<domain>:<bus> host bridge");
    }
    a.String(std_prefix + "pciBusID", d.parent.pci->address);
    if (d.parent.pci->numa_node >= 0) a.Int(std_prefix + "numaNode", d.parent.pci->numa_node);
  }
  a.String("transport", std::string(TransportName(d.transport)));
  a.String("rdmaDevice", d.name);
  a.String("nodeType", std::string(NodeTypeName(d.node_type)));
  a.String("function", std::string(FunctionName(d)));
  if (!d.netdevs.empty()) a.String("netdev", d.netdevs.front());
  a.String("netdevs", Join(d.netdevs, ","));
  a.String("driver", d.driver);
  a.String("rdmaDriver", d.rdma_driver);
  a.String("firmware", d.verbs && !d.verbs->fw_ver.empty() ? d.verbs->fw_ver : d.fw_ver);
  a.String("nodeGUID", d.node_guid);
  if (d.parent.pci) {
    const PciInfo& pci = *d.parent.pci;
    a.String("pciAddress", pci.address);
    a.String("vendorID", Hex4(pci.vendor_id));
    a.String("deviceID", Hex4(pci.device_id));
    if (pci.is_vf) {
      a.String("pfAddress", pci.pf_address);
      if (pci.vf_index >= 0) a.Int("vfIndex", pci.vf_index);
    }
    // The PF an SF or VF hangs off, by the RDMA device that sits on it.
    const std::string& pf_addr = d.parent.kind == ParentKind::kAuxiliary ? pci.address
                                 : pci.is_vf                              ? pci.pf_address
                                                                          : std::string();
    if (d.parent.kind == ParentKind::kAuxiliary) a.String("pfAddress", pci.address);
    if (!pf_addr.empty()) {
      for (const auto& other : all) {
        if (other.device.parent.kind == ParentKind::kPci && other.device.pci_address() == pf_addr) {
          a.String("pfName", other.device.name);
          break;
        }
      }
    }
  }
  if (d.parent.kind == ParentKind::kAuxiliary) a.String("auxDevice", d.parent.aux_name);
  if (d.parent.kind == ParentKind::kVirtual) a.String("lowerNetdev", d.parent.lower_netdev);
  if (d.transport == Transport::kRoce) a.Bool("roceV2", d.roce_v2);
  // Multus' DRA support reads these two of a claim's device, and skips a device without either:
  // the device ID it passes the delegate CNI, and the name a NetworkAttachmentDefinition's
  // k8s.v1.cni.cncf.io/resourceName annotation must equal ("<driver>/<transport>").
  a.String(std::string(kMultusPrefix) + "deviceID", MultusDeviceId(d));
  a.String(std::string(kMultusPrefix) + "resourceName",
           options.driver + "/" + std::string(TransportName(d.transport)));

  a.Int("ports", static_cast<int64_t>(d.ports.size()));
  int64_t active = std::count_if(d.ports.begin(), d.ports.end(),
                                 [](const Port& p) { return p.state == PortState::kActive; });
  a.Int("activePorts", active);
  if (!d.ports.empty()) {
    const Port& p = d.ports.front();
    a.String("portState", std::string(PortStateName(active > 0 ? PortState::kActive : p.state)));
    a.String("linkLayer", p.link_layer);
    a.String("linkSpeed", p.rate);
    // An int attribute: whole Gb/s (a 1X SDR port's 2.5 is 2).
    if (p.rate_gbps > 0) a.Int("linkSpeedGbps", static_cast<int64_t>(p.rate_gbps));
    if (d.transport == Transport::kIb) {
      if (p.lid) a.Int("lid", *p.lid);
      if (p.sm_lid) a.Int("smLid", *p.sm_lid);
      std::vector<std::string> pkeys;
      for (uint16_t k : p.pkeys) pkeys.push_back(Hex4(k));
      a.String("pkeys", Join(pkeys, ","));
    }
  }
}

}  // namespace

bool AwaitsSubnetManager(const RdmaDevice& device) {
  if (device.transport != Transport::kIb) return false;
  bool waiting = false;
  for (const Port& p : device.ports) {
    if (p.state == PortState::kActive) return false;
    waiting |= p.state == PortState::kInit || p.state == PortState::kArmed;
  }
  return waiting;
}

std::vector<DeviceInput> DeviceInputsOf(const std::vector<RdmaDevice>& devices) {
  std::vector<DeviceInput> out;
  out.reserve(devices.size());
  for (const RdmaDevice& d : devices) {
    DeviceInput in;
    in.device = d;
    out.push_back(std::move(in));
  }
  return out;
}

SliceDevicesResult BuildSliceDevices(const std::vector<DeviceInput>& inputs,
                                     const SliceDeviceOptions& options,
                                     const ServerFeatures& features) {
  SliceDevicesResult result;
  std::set<std::string> taken;
  std::vector<std::string> rdma_devs;
  for (const DeviceInput& in : inputs) rdma_devs.push_back(in.device.name);
  const DraDeviceNames names(std::move(rdma_devs), options.shares);
  result.notes = names.notes();
  for (const DeviceInput& in : inputs) {
    const std::string& rdma_dev = in.device.name;
    // A port the SM has not brought up yet: allocatable, but held at binding (KEP-5007).
    const bool held_at_binding = !in.healthy && features.binding_conditions && AwaitsSubnetManager(in.device);
    if (!in.healthy && !held_at_binding && !features.device_taints) {
      result.notes.push_back(rdma_dev + ": withdrawn while unhealthy (" + in.unhealthy_reason +
                             "): the server takes no device taints");
      continue;
    }
    SliceDevice base;
    base.name = names.Name(rdma_dev);
    if (base.name.empty()) continue;  // said in names.notes()
    AttributeSet attrs(base.attributes, result.notes, rdma_dev);
    AddAttributes(in, inputs, options, attrs);
    if (held_at_binding) {
      base.binding_conditions = {kBindingConditionPortActive};
      base.binding_failure_conditions = {kBindingFailurePortActivation};
    } else if (!in.healthy) {
      std::string reason = DraDeviceName(in.unhealthy_reason);
      base.taints.push_back({options.driver + "/" + kUnhealthyTaintKey, reason, options.taint_effect});
    }
    std::vector<SliceDevice> out;
    if (options.shares > 0 && features.consumable_capacity) {
      base.allow_multiple_allocations = true;
      base.capacity[kSharesCapacity] = {std::to_string(options.shares), "1"};
      out.push_back(std::move(base));
    } else if (options.shares > 0) {
      for (int k = 0; k < options.shares; ++k) {
        SliceDevice share = base;
        share.name = names.Name(rdma_dev, k);
        share.attributes["share"] = int64_t{k};
        out.push_back(std::move(share));
      }
    } else {
      out.push_back(std::move(base));
    }
    for (SliceDevice& d : out) {
      if (d.name.empty() || !IsDnsLabel(d.name) || !taken.insert(d.name).second) {
        result.notes.push_back(rdma_dev + ": left out: device name \"" + d.name +
                               "\" is empty or taken by another device");
        continue;
      }
      if (d.attributes.size() + d.capacity.size() > kMaxAttributesAndCapacities) {
        // A broken invariant of this file: the list above is shorter than the API's limit.
        result.notes.push_back(rdma_dev + ": left out: more than 32 attributes and capacities");
        continue;
      }
      result.rdma_dev_of.emplace_back(d.name, rdma_dev);
      result.devices.push_back(std::move(d));
    }
  }
  std::sort(result.devices.begin(), result.devices.end(),
            [](const SliceDevice& a, const SliceDevice& b) { return a.name < b.name; });
  std::sort(result.rdma_dev_of.begin(), result.rdma_dev_of.end());
  return result;
}

}  // namespace rdmak8s::dra
