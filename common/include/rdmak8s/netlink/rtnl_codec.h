// Pure encoding/decoding of the rtnetlink link and address messages rdmak8s sends and reads
// (include/uapi/linux/rtnetlink.h, if_link.h, if_addr.h; the layouts iproute2's `ip link show`,
// `ip link set dev X up|down`, `ip link set dev X netns N name M` and `ip addr show` use). No
// sockets: ChannelRouteNetlink carries these bytes. Tested on bytes.
//
// Link messages: struct nlmsghdr (RTM_GETLINK / RTM_NEWLINK / RTM_DELLINK), struct ifinfomsg,
// then IFLA_* attributes. Address messages: struct nlmsghdr (RTM_GETADDR / RTM_NEWADDR), struct
// ifaddrmsg, then IFA_* attributes. Attributes the decoders do not read are skipped; one they
// read that is shorter than its type, or one whose length runs past the message, is refused
// with kInvalidArgument naming it ("IFLA_MTU").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netlink_codec.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s::rtnl {

// RTM_GETLINK (NLM_F_ACK) for one link: ifi_index = ifindex (0 when looking up by name), and
// IFLA_IFNAME when `name` is non-empty (rtnl_dev_get in net/core/rtnetlink.c looks up by index
// first, then by name).
std::vector<uint8_t> BuildGetLink(uint32_t seq, int ifindex, std::string_view name);
// RTM_GETLINK, NLM_F_DUMP (family AF_UNSPEC): every link of the socket's netns.
std::vector<uint8_t> BuildDumpLinks(uint32_t seq);
// RTM_NEWLINK (NLM_F_ACK) on an existing link: ifi_flags IFF_UP or 0, ifi_change IFF_UP, so
// only that flag changes (dev_change_flags).
std::vector<uint8_t> BuildSetLinkUp(uint32_t seq, int ifindex, bool up);
// RTM_NEWLINK (NLM_F_ACK) on an existing link with IFLA_NET_NS_FD (u32), and IFLA_IFNAME when
// `new_name` is non-empty: do_setlink moves the link, then renames it in the target netns.
std::vector<uint8_t> BuildMoveLinkToNetns(uint32_t seq, int ifindex, uint32_t netns_fd,
                                          std::string_view new_name);
// RTM_GETADDR, NLM_F_DUMP, family AF_UNSPEC: the addresses of every link, both families.
std::vector<uint8_t> BuildDumpAddresses(uint32_t seq);

// An RTM_NEWLINK or RTM_DELLINK message (a GET reply, a dump entry or a link event): ifindex
// and flags from struct ifinfomsg; IFLA_IFNAME, IFLA_ADDRESS (as "aa:bb:...", any length),
// IFLA_MTU, IFLA_LINK, IFLA_LINK_NETNSID, IFLA_OPERSTATE, IFLA_LINKINFO { IFLA_INFO_KIND },
// IFLA_PARENT_DEV_NAME, IFLA_PARENT_DEV_BUS_NAME. oper_up is IF_OPER_UP, or IFF_RUNNING when the
// operstate is unknown or absent (drivers without operstate support).
// kInvalidArgument for another message type, a payload shorter than struct ifinfomsg, or a bad
// attribute (see above).
StatusOr<LinkInfo> ParseLink(const nl::Message& m);

// An RTM_NEWADDR message: family, prefix length and ifindex from struct ifaddrmsg; the address
// is IFA_LOCAL, else IFA_ADDRESS (IPv4 carries both, IFA_ADDRESS being the peer on
// point-to-point links; IPv6 carries IFA_ADDRESS only). For families other than AF_INET and
// AF_INET6 the address is left empty. kInvalidArgument for another message type, a payload
// shorter than struct ifaddrmsg, an address shorter than its family's, or a bad attribute.
StatusOr<IpAddress> ParseAddress(const nl::Message& m);

}  // namespace rdmak8s::rtnl
