// Discovery's public entry points: DiscoverAll (list, context, fan-out, hot-unplug rule),
// DiscoverOne (only what hangs off one device's parent) and the look-ups over the result.
#include "rdmak8s/discovery/discovery.h"

#include <algorithm>

#include "discovery/discovery_context.h"
#include "discovery/discovery_device.h"
#include "discovery/discovery_fan_out.h"
#include "rdmak8s/device/device_id.h"
#include "device/sysfs.h"

namespace rdmak8s {

using internal::SysfsDir;
using internal::discovery::BuildContext;
using internal::discovery::Context;
using internal::discovery::Enrich;
using internal::discovery::NormalRoot;
using internal::discovery::ReadDevice;
using internal::discovery::ReadDevices;
using internal::discovery::ResolveLink;

SysfsDiscovery::SysfsDiscovery(DiscoveryOptions options) : options_(std::move(options)) {}

StatusOr<DiscoveryResult> SysfsDiscovery::DiscoverAll() {
  DiscoveryResult result;
  const std::string root = NormalRoot(options_.sysfs_root);
  StatusOr<SysfsDir> klass = SysfsDir::Open(root + "/class/infiniband");
  if (!klass.ok()) {
    if (klass.status().code() == StatusCode::kNotFound) return result;  // no RDMA core loaded
    return klass.status().Prepend("discover RDMA devices");
  }
  result.rdma_present = true;
  StatusOr<std::vector<std::string>> names = klass->List();
  if (!names.ok()) return names.status().Prepend("discover RDMA devices");
  std::sort(names->begin(), names->end());
  StatusOr<Context> ctx = BuildContext(root);
  if (!ctx.ok()) return ctx.status().Prepend("discover RDMA devices");
  result.failures = std::move(ctx->failures);
  std::vector<std::optional<StatusOr<RdmaDevice>>> read = ReadDevices(*ctx, *names);
  for (size_t i = 0; i < names->size(); ++i) {
    const std::string& name = (*names)[i];
    StatusOr<RdmaDevice>& d = *read[i];
    if (!d.ok()) {
      // Gone between the listing and the read (hot-unplug): not a failure, just not there.
      if (d.status().code() == StatusCode::kNotFound &&
          !SysfsDir::Open(root + "/class/infiniband/" + name).ok()) {
        continue;
      }
      result.failures.push_back({name, d.status().Prepend("discover " + name)});
      continue;
    }
    Enrich(options_.verbs, *d);
    result.devices.push_back(std::move(d).value());
  }
  return result;
}

StatusOr<RdmaDevice> SysfsDiscovery::DiscoverOne(std::string_view rdma_dev) {
  std::string name(rdma_dev);
  if (!IsRdmaDeviceName(name)) return InvalidArgumentError("bad RDMA device name \"" + name + "\"");
  const std::string root = NormalRoot(options_.sysfs_root);
  StatusOr<SysfsDir> dev = SysfsDir::Open(root + "/class/infiniband/" + name);
  if (!dev.ok()) return dev.status().Prepend("discover " + name);
  // Read only what hangs off this device's parent (a rescan of one device on a host with
  // hundreds should not read them all).
  std::string only_under;
  const std::string class_dir = root + "/class/infiniband";
  if (StatusOr<std::string> l = internal::ReadLinkPath(class_dir + "/" + name); l.ok()) {
    std::string real_dir = ResolveLink(class_dir, *l);
    StatusOr<std::string> dev_link = dev->ReadLink("device");
    only_under = dev_link.ok() ? ResolveLink(real_dir, *dev_link) : root + "/devices/virtual";
  }
  RDMAK8S_ASSIGN_OR_RETURN(Context ctx, BuildContext(root, only_under));
  StatusOr<RdmaDevice> d = ReadDevice(ctx, name);
  if (!d.ok()) return d.status().Prepend("discover " + name);
  Enrich(options_.verbs, *d);
  return d;
}

const RdmaDevice* FindByName(const std::vector<RdmaDevice>& devs, std::string_view rdma_dev) {
  for (const RdmaDevice& d : devs) {
    if (d.name == rdma_dev) return &d;
  }
  return nullptr;
}

const RdmaDevice* FindByPciAddress(const std::vector<RdmaDevice>& devs,
                                   std::string_view pci_addr) {
  // The device on the function itself, not an SF that merely belongs to it.
  for (const RdmaDevice& d : devs) {
    if (d.parent.kind == ParentKind::kPci && d.pci_address() == pci_addr) return &d;
  }
  return nullptr;
}

const RdmaDevice* FindByAuxName(const std::vector<RdmaDevice>& devs, std::string_view aux_name) {
  for (const RdmaDevice& d : devs) {
    if (d.parent.kind == ParentKind::kAuxiliary && d.parent.aux_name == aux_name) return &d;
  }
  return nullptr;
}

std::vector<const RdmaDevice*> FindByNetdev(const std::vector<RdmaDevice>& devs,
                                            std::string_view netdev) {
  std::vector<const RdmaDevice*> out;
  for (const RdmaDevice& d : devs) {
    if (std::find(d.netdevs.begin(), d.netdevs.end(), netdev) != d.netdevs.end()) {
      out.push_back(&d);
    }
  }
  return out;
}

}  // namespace rdmak8s
