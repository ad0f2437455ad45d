// Where rdmak8s-inspect check reads the node: host paths and the kernel interfaces, as seams.
//
// Every pointer may be null: the interface could not be opened (the open error says why), and
// each check that needs it reports that instead of its verdict. Nothing here is owned.
#pragma once

#include <string>

#include "rdmak8s/base/status.h"
#include "rdmak8s/discovery/discovery.h"
#include "rdmak8s/netlink/dcb_netlink.h"
#include "rdmak8s/netlink/rdma_netlink.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s::inspect {

struct CheckEnv {
  std::string sysfs_root = "/sys";   // discovery, ECN knobs, PF netdevs, hugepages
  std::string dev_root = "/dev";     // <dev_root>/infiniband/{uverbsN,umadN,rdma_cm}
  std::string proc_root = "/proc";   // the container runtime's /proc/<pid>/{comm,limits}
  // The host's init in proc_root: its mount namespace and root are the host's, the runtime's.
  std::string host_pid = "1";
  Discovery* discovery = nullptr;
  DcbPfc* pfc = nullptr;
  DcbAppTable* app = nullptr;
  DcbAppTrust* trust = nullptr;
  Status dcb_error;                  // why the DCB roles are null
  RdmaNetlink* rdma = nullptr;
  Status rdma_error;
  LinkLookup* links = nullptr;
  AddressLookup* addresses = nullptr;
  Status route_error;
};

}  // namespace rdmak8s::inspect
