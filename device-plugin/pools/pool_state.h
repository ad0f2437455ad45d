// PoolState: what one pool advertises at one moment — its device IDs, the devices behind them
// and their health. Built by the daemon, read by the gRPC service; immutable once published
// (shared as std::shared_ptr<const PoolState>), so readers never lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "device-plugin/config/config.h"
#include "node/tracked_device.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::dp {

inline constexpr char kHealthy[] = "Healthy";
inline constexpr char kUnhealthy[] = "Unhealthy";

struct PoolState {
  std::string resource;  // "<prefix>/<pool>"
  PoolConfig pool;
  bool cdi = false;      // Allocate answers with CDI device names instead of DeviceSpecs
  std::string cdi_kind;  // "<prefix>/<pool>" as CDI kind (vendor/class)
  std::string dev_root = "/dev";
  std::vector<std::string> ids;                 // advertised, in order
  std::map<std::string, std::string> id_to_dev; // device ID -> rdma_dev
  std::map<std::string, node::TrackedDevice> devices; // rdma_dev -> device
  uint64_t generation = 0;
  // Variables the pool opts into but leaves out because another pool opts into them too
  // (SharedDeviceListEnv, device_list_env.h).
  std::set<std::string> env_left_out;

  const node::TrackedDevice* ForId(const std::string& id) const;
};

// The ID of a device in an exclusive pool: what a netdev plugin finds the function by, because
// Multus hands the allocated ID to every plugin of the chain as `deviceID` (and `pciBusID`):
// the PCI address for a PF or VF ("0000:3b:00.2", as host-device and sriov-cni expect), the
// auxiliary device name for an SF ("mlx5_core.sf.2"), the RDMA device name for a soft device
// (rxe, siw), which has no bus device, or which shares its bus device with another RDMA device
// (ExclusiveDeviceId, rdmak8s/device/device_id.h). rdmak8s's CNI resolves all three.
std::string ExclusiveId(const RdmaDevice& dev);
// IDs one device contributes: exclusive ExclusiveId(dev), shared "<rdma_dev>-<k>" for k <
// capacity.
std::vector<std::string> DeviceIds(const PoolConfig& pool, const RdmaDevice& dev);
// Shared capacity per device: the configured number, or for "auto" kAutoCapacityDefault capped
// by what libibverbs reports (max_pd and max_qp: every sharing pod needs at least one of each).
int EffectiveCapacity(const PoolConfig& pool, const RdmaDevice& dev);

// Adds `devices` (all with health decided) to `state`, filling ids and id_to_dev.
void FillIds(PoolState& state);

// What kubelet sees of one ID: the ListAndWatch entry (kubelet/pool_answers.h sends it). A pool
// whose list is unchanged is not sent again.
struct AdvertisedId {
  std::string id;
  bool healthy = false;
  int numa_node = -1;  // < 0: none
  friend bool operator==(const AdvertisedId&, const AdvertisedId&) = default;
};
// Every advertised ID in order, with its device's health and NUMA node.
std::vector<AdvertisedId> Advertised(const PoolState& state);

// The distinct rdma_devs behind `ids`, in first-seen order (no validation).
std::vector<std::string> DevicesOf(const PoolState& state, const std::vector<std::string>& ids);

// Where a pool's state goes once built: the pool's gRPC server (kubelet/plugin_server.h), which
// with `notify` sends it to every open ListAndWatch stream. The pool publisher knows only this.
class PoolStateSink {
 public:
  virtual ~PoolStateSink() = default;
  virtual void Publish(std::shared_ptr<const PoolState> state, bool notify) = 0;
};

}  // namespace rdmak8s::dp
