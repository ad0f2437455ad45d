// DeviceResolver: which RDMA device an attachment is, where its sysfs shows it, and whether it
// can serve the pod (the one port-usable rule, rdmak8s/device/port_usable.h; IB pkey).
//
// In exclusive RDMA netns mode a device in a pod is hidden from the node's sysfs
// (class/infiniband is netns tagged, see cni/sysfs_view.h), so the answers here look in the
// node's sysfs and in the pod's view of it. The pod's view is opened at most once per pod netns
// (one sysfs mount) and stays open as long as the resolver lives: one invocation.
//
// Each failure is recorded on the FailureCode (cni/failure_code.h) with the code named below.
// Not thread safe: one invocation, one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cni/dra_device.h"
#include "cni/failure_code.h"
#include "cni/log.h"
#include "cni/plugin_options.h"
#include "cni/state.h"
#include "cni/sysfs_view.h"
#include "rdmak8s/base/status.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/netlink/netns.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s::cni {

// What the netconf and the runtime say about the device wanted.
struct DeviceSelector {
  std::string device_id;         // netconf deviceID; empty: the pod's DRA device, else `ifname`
  std::string ifname;            // CNI_IFNAME: the pod interface
  uint32_t port = 0;             // netconf port; 0: no port asked for
  std::optional<uint16_t> pkey;  // netconf pkey (IB)
  std::string cni_args{};        // CNI_ARGS: K8S_POD_UID names the pod's DRA records
  std::string dra_request{};     // netconf draRequest (cni/dra_device.h)
  std::string pod_devices_dir{}; // the node's DRA records dir (NodeConfig); never the netconf's
  std::string pod_resources_socket{};  // kubelet's pod-resources API (NodeConfig); never the netconf's
};

// The device an ADD attaches, read where it shows now, and the ports it uses.
struct UsableDevice {
  LookedUpDevice dev;
  std::vector<uint32_t> ports;  // PortsOf
};

class DeviceResolver {
 public:
  // `sysfs_root`: the node's sysfs (or a netconf override). `pod_view`: how to read a pod's
  // sysfs (not owned, outlives the resolver); nullptr: read `sysfs_root` as is for every pod (a
  // fixture tree). `options`: the rtnetlink and RDMA netlink factories.
  DeviceResolver(const PluginOptions& options, DeviceSelector selector, std::string sysfs_root,
                 SysfsView* pod_view, Logger& log, FailureCode& failure);

  const std::string& sysfs_root() const { return sysfs_root_; }
  // The node's sysfs.
  const DeviceLookup& host_sysfs() const { return host_sysfs_; }

  // The RDMA device of this attachment: `deviceID`, in the node's sysfs or else the pod's view,
  // and one the pod was given (cni/pod_grant.h: 100, or 11 when kubelet can't be asked);
  // without one, the device a DRA claim gave the pod (K8S_POD_UID's records in the node's
  // pod_devices_dir, PickDraDevice with draRequest), found as a deviceID is; when the pod has
  // none (and no draRequest asks for one), CNI_IFNAME in the pod followed down its stacked links
  // (macvlan, ipvlan, vlan, IPoIB child; at most 8) to a netdev of the device. 100 also when the
  // pod's DRA records can't be trusted or read (naming the path), when K8S_POD_UID is not a
  // plain name, when several DRA devices match, and when neither a claim nor CNI_IFNAME leads
  // to a device (naming the pod UID). *port: the netdev's port (dev_port) when
  // known and the device has several, else left as is. *in_pod: the device shows only in the
  // pod's view (exclusive mode, already moved there). 100 when no device matches (or the
  // interface can't be read), 101 when the deviceID's device is in another pod's netns, 5 when
  // rtnetlink can't be opened.
  Status ResolveDevice(const Netns& pod, std::string* dev, uint32_t* port, bool* in_pod);
  // ResolveDevice, then the device read where it shows (the pod's view once it is in the pod: a
  // re-ADD), its ports (PortsOf) and CheckUsable on them. 100 when it can't be read; the codes
  // of ResolveDevice and CheckUsable otherwise.
  StatusOr<UsableDevice> ResolveUsable(const Netns& pod);
  // The root of the pod's sysfs view: opened on first use, kept until the resolver ends. The
  // view's error otherwise (nothing recorded on the FailureCode).
  StatusOr<std::string> PodSysfsRoot(const Netns& pod);
  // fn(the pod's sysfs root); the view's error, or fn's Status.
  Status InPodSysfs(const Netns& pod, const std::function<Status(const std::string&)>& fn);
  // fn(the sysfs root under which `rec`'s device shows now): the pod's view when the device is
  // in the pod (moved, or exclusive mode) and `pod` is given, else the node's sysfs.
  Status WithDeviceSysfs(const AttachmentRecord& rec, const Netns* pod,
                         const std::function<Status(const std::string&)>& fn);
  // The ports of `dev` the attachment uses: the netconf's port, else `resolved_port` (0: none),
  // else the usable ones (port_usable.h: ACTIVE and LinkUp), else all of them (CheckUsable then
  // says why each is not usable).
  std::vector<uint32_t> PortsOf(const LookedUpDevice& dev, uint32_t resolved_port) const;
  // Whether `dev` can serve on `ports`, each re-read from `sys` (where the device shows) and
  // judged by the one port-usable rule (port_usable.h, without the netdev's state): 7 when there
  // is no such port or the netconf pkey is not in a port's PKey table; for IB, 11 while a port
  // is INIT or ARMED (the subnet manager is not done), 101 when it is otherwise not usable
  // (DOWN, or ACTIVE but not LinkUp); for RoCE, iWARP and unknown transports, 11 when a port is
  // not usable (its link may still be coming up), naming the transport, device, port and why;
  // 5 when a port's state or PKeys can't be read.
  Status CheckUsable(const DeviceLookup& sys, const LookedUpDevice& dev, const std::vector<uint32_t>& ports);
  // CHECK: rec's device read where it shows now (the pod's view once moved) and, for IB,
  // CheckUsable on its ports. *ports: the ports ADD chose (older records: as ADD would choose
  // now). 101 when the device can't be read or its sysfs seen; CheckUsable's codes otherwise.
  Status CheckStillUsable(const AttachmentRecord& rec, const Netns& pod, std::vector<uint32_t>* ports);
  // Whether RDMA netlink in `ns` (nullptr: the node's) lists `dev`. Netlink's error otherwise
  // (nothing recorded: the caller decides the code).
  StatusOr<bool> DeviceVisibleIn(const Netns* ns, const std::string& dev);

 private:
  // The pod's DRA device, or nullopt when it has none and no draRequest asks for one (then
  // *no_claim says so, for the error of the CNI_IFNAME path). Failures recorded (100).
  StatusOr<std::optional<DraChoice>> FromDraClaims(std::string* no_claim);
  // ResolveDevice for an ID (a deviceID, or a DRA device's name).
  Status ResolveById(const Netns& pod, const std::string& id, std::string* dev, bool* in_pod);
  // ResolveDevice by CNI_IFNAME: its lowest netdev, then the RDMA device of that netdev by
  // where it lives (the node, a bus device's, the pod's).
  Status ResolveByIfname(const Netns& pod, std::string* dev, uint32_t* port, bool* in_pod);
  // CNI_IFNAME followed down its stacked links (macvlan, ipvlan, vlan, IPoIB child...) to the
  // netdev on the device; `in_node`: that netdev is the node's (else the pod's).
  struct LowestNetdev {
    LinkInfo link;
    bool in_node = false;
  };
  StatusOr<LowestNetdev> LowestNetdevOf(const Netns& pod, const std::string& what);
  // The RDMA device of a netdev with a parent bus device (a VF, a host device): the node's,
  // else the pod's view (exclusive mode); its port when the device has several.
  Status ResolveByParentDev(const Netns& pod, const LinkInfo& netdev, const std::string& via,
                            std::string* dev, uint32_t* port, bool* in_pod);
  // The RDMA device of a netdev in the pod without a parent bus device.
  Status ResolveByPodNetdev(const Netns& pod, const LinkInfo& netdev, const std::string& what,
                            std::string* dev, uint32_t* port, bool* in_pod);

  const PluginOptions& o_;
  DeviceSelector sel_;
  std::string sysfs_root_;
  DeviceLookup host_sysfs_;
  Logger& log_;
  FailureCode& failure_;
  std::unique_ptr<FixedSysfsView> fixed_view_;
  SysfsView* view_ = nullptr;
  std::map<std::string, std::unique_ptr<SysfsRoot>> pod_roots_;  // by netns path
};

}  // namespace rdmak8s::cni
