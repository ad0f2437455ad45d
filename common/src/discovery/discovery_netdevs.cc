// Discovery's netdev index (class/net by bus parent) and upper netdevs (class/net/<n>/upper_*).
#include "discovery/discovery_netdevs.h"

#include <algorithm>

#include "rdmak8s/base/file_util.h"
#include "device/sysfs.h"

namespace rdmak8s::internal::discovery {

using internal::SysfsDir;

Status IndexNetdevs(Context& ctx) {
  StatusOr<SysfsDir> net = SysfsDir::Open(ctx.root + "/class/net");
  if (!net.ok()) {
    if (net.status().code() == StatusCode::kNotFound) return Status::Ok();
    return net.status();
  }
  RDMAK8S_ASSIGN_OR_RETURN(std::vector<std::string> names, net->List());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    // class/net/<n> -> ../../devices/<parent device>/net/<n>: the parent is two levels up.
    StatusOr<std::string> link = net->ReadLink(name);
    if (!link.ok()) continue;  // bonding_masters and other plain files
    std::string real = ResolveLink(net->path(), *link);
    std::string parent = Dirname(Dirname(real));
    if (Basename(Dirname(real)) != "net") continue;
    ctx.net_by_parent[parent].push_back(name);
  }
  return Status::Ok();
}

// Upper devices the kernel links from a netdev (class/net/<n>/upper_<m>: vlan, macvlan, bond...).
void AddUppers(const std::string& root, std::vector<std::string>& netdevs) {
  for (size_t i = 0; i < netdevs.size() && i < 64; ++i) {
    // Missing: the netdev lives in another namespace, nothing to follow.
    StatusOr<std::vector<std::string>> names =
        internal::ListPath(root + "/class/net/" + netdevs[i]);
    if (!names.ok()) continue;
    std::sort(names->begin(), names->end());
    for (const std::string& n : *names) {
      if (n.rfind("upper_", 0) == 0) AddUnique(netdevs, n.substr(6));
    }
  }
}


}  // namespace rdmak8s::internal::discovery
