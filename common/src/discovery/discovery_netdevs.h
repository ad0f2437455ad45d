// Discovery's netdev side: the class/net index (which netdevs sit on which bus device) and the
// upper netdevs (vlan, macvlan, bond) the kernel links from them. Internal to rdmak8s_common.
#pragma once

#include <string>
#include <vector>

#include "discovery/discovery_context.h"

namespace rdmak8s::internal::discovery {

// class/net/<n> -> <parent device>/net/<n>, into ctx.net_by_parent. A missing class/net is empty.
Status IndexNetdevs(Context& ctx);

// Appends to `netdevs` the upper devices the kernel links from each of them
// (class/net/<n>/upper_<m>), transitively, at most 64 netdevs deep.
void AddUppers(const std::string& root, std::vector<std::string>& netdevs);

}  // namespace rdmak8s::internal::discovery
