// FabricMetrics: what the fabric under the advertised devices does, read when Prometheus scrapes
// (never polled: an idle plugin reads nothing). Per RDMA device and port, from sysfs:
//   rdmak8s_rdma_counter_total{device,port,driver,counter,kind}  counter: every monotonic file of
//       ports/<p>/counters and ports/<p>/hw_counters, `kind` its meaning (counter_names.h),
//       "other" for the rest, so an unknown driver is exported too;
//   rdmak8s_rdma_resource{device,port,driver,counter}  gauge: hw_counters that go up and down
//       (bnxt_re active_* / watermark_*);
//   rdmak8s_port_active{device,port,driver}  gauge: 1 when ports/<p>/state is ACTIVE;
//   rdmak8s_port_counter{rdma_dev,port,counter,source}  untyped: the raw files, as before the
//       typed families existed (kept for dashboards built on it);
// per RoCE PF netdev, from its ethtool statistics (ethtool_stats.h):
//   rdmak8s_pfc_pause_frames_total{netdev,priority,direction,counter}  counter;
// and from the node check's last results file (node_check_results.h):
//   rdmak8s_node_check{subject,check}  gauge 1 pass / 0 fail (skipped checks are left out);
//   rdmak8s_node_check_passed  gauge 1 / 0; rdmak8s_node_check_timestamp_seconds  gauge.
// A device or netdev that cannot be read is left out of that scrape (it may be leaving).
//
// Thread safety: SetDevices and Collect may run on different threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "device-plugin/metrics/ethtool_stats.h"
#include "rdmak8s/device/device.h"

namespace rdmak8s::dp {

// A device whose counters a scrape reads.
struct CounterDevice {
  std::string rdma_dev;
  std::string driver;  // the RDMA driver (mlx5_ib, irdma, bnxt_re, rxe), else the bus device's
  Transport transport = Transport::kUnknown;
  std::vector<uint32_t> ports;
};

struct FabricSources {
  std::string sysfs_root = "/sys";
  EthtoolStats* ethtool = nullptr;   // not owned; null: no PFC counters
  std::string node_check_results;    // "": no node check metrics
};

class FabricMetrics final : public prometheus::Collectable {
 public:
  explicit FabricMetrics(FabricSources sources);

  // Replaces the devices a scrape reads. The PF netdev of each RoCE device (DCB and PFC live
  // there: device_lookup.h PfNetdev) is resolved here, once per device seen, not per scrape.
  void SetDevices(std::vector<CounterDevice> devices);
  // Changes where the node check's results are read ("" stops).
  void SetNodeCheckResults(std::string path);
  // Sets the ethtool seam (null stops the PFC counters).
  void SetEthtool(EthtoolStats* ethtool);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Device {
    CounterDevice dev;
    std::string pf_netdev;  // RoCE only; "" when none
  };
  void CollectPorts(const Device& d, std::vector<prometheus::MetricFamily>& fams) const;
  void CollectPfc(std::vector<prometheus::MetricFamily>& fams) const;
  void CollectNodeCheck(std::vector<prometheus::MetricFamily>& fams) const;

  mutable std::mutex mu_;
  FabricSources sources_;
  std::vector<Device> devices_;
};

}  // namespace rdmak8s::dp
