// Discovery: builds the device model (device.h) from sysfs, optionally enriched by libibverbs.
//
// Reads only under DiscoveryOptions::sysfs_root (default "/sys"), so every test runs against a
// fixture tree shaped like the kernel's (tests/fixtures/sysfs/<case>/). Sources:
//   class/infiniband/<dev>/{node_type,node_guid,sys_image_guid,fw_ver,hca_type,board_id,device}
//   class/infiniband/<dev>/ports/<n>/{state,phys_state,link_layer,rate,lid,sm_lid,lid_mask_count,
//                                      gids/<i>,gid_attrs/{types,ndevs}/<i>,pkeys/<i>}
//   class/infiniband_verbs/uverbs<N>/{ibdev,dev}, class/infiniband_mad/{umad,issm}<N>/{ibdev,port,dev},
//   class/misc/rdma_cm/dev, bus/pci/devices/<bdf>/{vendor,device,numa_node,physfn,virtfn<N>,...},
//   class/net/<netdev>/{device,upper_*}, <bus device>/infiniband/ (RdmaDevice::bus_peers, the rule
//   device_lookup.h RdmaDevicesOnBusDir gives the CNI too)
//
// Errors: a missing class/infiniband means "no RDMA on this host" (an empty, OK result). A
// device that can't be read fully lands in DiscoveryResult::failures with a Status naming the
// path; it is never dropped silently. An unreadable class/infiniband is an error of the whole
// call.
//
// Thread safety: a SysfsDiscovery is immutable after construction; its methods may be called
// from several threads at once (the VerbsQuery passed in must then be thread safe too).
// DiscoverAll reads the devices of a large host on a few short-lived threads of its own (the
// cost is syscalls); it calls the VerbsQuery only from the calling thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s {

class VerbsQuery;  // verbs.h

struct DiscoveryOptions {
  std::string sysfs_root = "/sys";
  // Not owned; may be null (sysfs only). Used to fill RdmaDevice::verbs where it answers.
  VerbsQuery* verbs = nullptr;
};

struct DeviceFailure {
  // The device that failed. Empty for a failure no device can be tied to (e.g. a char device
  // whose class link and `ibdev` are both unreadable, or rdma_cm): still a reason not to trust
  // the result fully. An unreadable uverbs/umad node fails every device on its bus parent.
  std::string rdma_dev;
  Status status;  // names the path that could not be read and why
};

struct DiscoveryResult {
  bool rdma_present = false;  // class/infiniband exists (an RDMA core is loaded)
  std::vector<RdmaDevice> devices;      // sorted by name
  std::vector<DeviceFailure> failures;  // devices that exist but could not be read fully
};

// Role interface so consumers (device plugin, CNI) can be tested with an in-memory fake.
class Discovery {
 public:
  virtual ~Discovery() = default;
  // Every RDMA device on the host.
  virtual StatusOr<DiscoveryResult> DiscoverAll() = 0;
  // One device by rdma_dev name; kNotFound when it does not exist (e.g. hot-unplugged).
  virtual StatusOr<RdmaDevice> DiscoverOne(std::string_view rdma_dev) = 0;
};

class SysfsDiscovery : public Discovery {
 public:
  explicit SysfsDiscovery(DiscoveryOptions options);
  StatusOr<DiscoveryResult> DiscoverAll() override;
  StatusOr<RdmaDevice> DiscoverOne(std::string_view rdma_dev) override;

 private:
  DiscoveryOptions options_;
};

// Pure look-ups over a discovered set (no I/O). Each returns null when nothing matches.
const RdmaDevice* FindByName(const std::vector<RdmaDevice>& devs, std::string_view rdma_dev);
const RdmaDevice* FindByPciAddress(const std::vector<RdmaDevice>& devs, std::string_view pci_addr);
const RdmaDevice* FindByAuxName(const std::vector<RdmaDevice>& devs, std::string_view aux_name);
// All devices one of whose ports carries `netdev` (directly or as an upper device).
std::vector<const RdmaDevice*> FindByNetdev(const std::vector<RdmaDevice>& devs,
                                            std::string_view netdev);

}  // namespace rdmak8s
