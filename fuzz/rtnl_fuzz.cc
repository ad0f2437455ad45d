// Fuzz target: the rtnetlink link and address decoders (rdmak8s/netlink/rtnl_codec.h ParseLink,
// ParseAddress) on what RTM_GETLINK / RTM_GETADDR dumps and link events could carry. Input: one
// datagram; its messages are decoded as they come, and the whole input is also decoded as the
// body (family header, then attributes) of an RTM_NEWLINK, RTM_DELLINK and RTM_NEWADDR.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument;
//   - a decoded link, encoded again as the kernel would (struct ifinfomsg, IFLA_IFNAME,
//     IFLA_ADDRESS, IFLA_MTU, IFLA_LINK, IFLA_LINK_NETNSID, IFLA_OPERSTATE, IFLA_LINKINFO
//     { IFLA_INFO_KIND }, IFLA_PARENT_DEV_NAME, IFLA_PARENT_DEV_BUS_NAME), decodes to the same;
//   - a decoded address, encoded again (struct ifaddrmsg, IFA_LOCAL), decodes to the same, and
//     an AF_INET / AF_INET6 address that has one is text inet_pton reads back.
#include <arpa/inet.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <cstdio>

#include "fuzz/fuzz_check.h"
#include "rdmak8s/netlink/rtnl_codec.h"

namespace {

using namespace rdmak8s;

nl::Message OnlyMessage(const std::vector<uint8_t>& bytes) {
  auto msgs = nl::SplitMessages(bytes);
  FUZZ_CHECK(msgs.ok() && msgs->size() == 1, "an encoded message does not split");
  return (*msgs)[0];
}

std::vector<uint8_t> MacBytes(const std::string& mac) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < mac.size(); i += 3) {
    unsigned v = 0;
    FUZZ_CHECK(std::sscanf(mac.c_str() + i, "%2x", &v) == 1 &&
                   (i + 2 == mac.size() || mac[i + 2] == ':'),
               "MAC " + mac);
    out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

bool SameLink(const LinkInfo& a, const LinkInfo& b) {
  return a.ifindex == b.ifindex && a.name == b.name && a.mac == b.mac &&
         a.admin_up == b.admin_up && a.oper_up == b.oper_up && a.kind == b.kind &&
         a.link_ifindex == b.link_ifindex && a.link_netnsid == b.link_netnsid &&
         a.parent_bus == b.parent_bus && a.parent_dev == b.parent_dev && a.mtu == b.mtu;
}

void CheckLink(const nl::Message& m) {
  auto l = rtnl::ParseLink(m);
  if (!l.ok()) {
    FUZZ_CHECK(l.status().code() == StatusCode::kInvalidArgument, l.status().ToString());
    return;
  }
  ifinfomsg ifi{};
  ifi.ifi_index = l->ifindex;
  ifi.ifi_flags = l->admin_up ? IFF_UP : 0;
  nl::MessageBuilder b(m.type, NLM_F_MULTI, 1);
  b.AppendHeader(&ifi, sizeof(ifi));
  b.PutString(IFLA_IFNAME, l->name);
  const std::vector<uint8_t> mac = MacBytes(l->mac);
  b.PutBytes(IFLA_ADDRESS, mac.data(), mac.size());
  b.PutU32(IFLA_MTU, l->mtu);
  b.PutU32(IFLA_LINK, static_cast<uint32_t>(l->link_ifindex));
  b.PutU32(IFLA_LINK_NETNSID, static_cast<uint32_t>(l->link_netnsid));
  b.PutU8(IFLA_OPERSTATE, l->oper_up ? IF_OPER_UP : IF_OPER_DOWN);
  size_t info = b.BeginNested(IFLA_LINKINFO);
  b.PutString(IFLA_INFO_KIND, l->kind);
  b.EndNested(info);
  b.PutString(IFLA_PARENT_DEV_NAME, l->parent_dev);
  b.PutString(IFLA_PARENT_DEV_BUS_NAME, l->parent_bus);
  auto again = rtnl::ParseLink(OnlyMessage(std::move(b).Finish()));
  FUZZ_CHECK(again.ok(), again.status().ToString());
  FUZZ_CHECK(SameLink(*l, *again), "link " + l->name + " changed in a round trip");
}

void CheckAddress(const nl::Message& m) {
  auto ip = rtnl::ParseAddress(m);
  if (!ip.ok()) {
    FUZZ_CHECK(ip.status().code() == StatusCode::kInvalidArgument, ip.status().ToString());
    return;
  }
  ifaddrmsg ifa{};
  ifa.ifa_family = static_cast<uint8_t>(ip->family);
  ifa.ifa_prefixlen = static_cast<uint8_t>(ip->prefix_len);
  ifa.ifa_index = static_cast<uint32_t>(ip->ifindex);
  nl::MessageBuilder b(RTM_NEWADDR, NLM_F_MULTI, 1);
  b.AppendHeader(&ifa, sizeof(ifa));
  if (!ip->address.empty()) {
    FUZZ_CHECK(ip->family == AF_INET || ip->family == AF_INET6, ip->address);
    unsigned char raw[16];
    FUZZ_CHECK(inet_pton(ip->family, ip->address.c_str(), raw) == 1, ip->address);
    b.PutBytes(IFA_LOCAL, raw, ip->family == AF_INET ? 4 : 16);
  }
  auto again = rtnl::ParseAddress(OnlyMessage(std::move(b).Finish()));
  FUZZ_CHECK(again.ok(), again.status().ToString());
  FUZZ_CHECK(again->family == ip->family && again->address == ip->address &&
                 again->prefix_len == ip->prefix_len && again->ifindex == ip->ifindex,
             ip->address + " changed in a round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  CheckLink(nl::Message{RTM_NEWLINK, NLM_F_MULTI, 1, 0, bytes});
  CheckLink(nl::Message{RTM_DELLINK, 0, 1, 0, bytes});
  CheckAddress(nl::Message{RTM_NEWADDR, NLM_F_MULTI, 1, 0, bytes});
  auto msgs = nl::SplitMessages(bytes);
  if (!msgs.ok()) return 0;
  for (const nl::Message& m : *msgs) {
    CheckLink(m);
    CheckAddress(m);
  }
  return 0;
}
