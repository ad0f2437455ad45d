#include "rdmak8s/netlink/rtnl_codec.h"

#include <arpa/inet.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace rdmak8s::rtnl {
namespace {

// The IFLA_* attributes ParseLink reads, for its error messages.
const char* IflaName(uint16_t type) {
  switch (type) {
    case IFLA_ADDRESS: return "IFLA_ADDRESS";
    case IFLA_IFNAME: return "IFLA_IFNAME";
    case IFLA_MTU: return "IFLA_MTU";
    case IFLA_LINK: return "IFLA_LINK";
    case IFLA_OPERSTATE: return "IFLA_OPERSTATE";
    case IFLA_LINKINFO: return "IFLA_LINKINFO";
    case IFLA_LINK_NETNSID: return "IFLA_LINK_NETNSID";
    case IFLA_PARENT_DEV_NAME: return "IFLA_PARENT_DEV_NAME";
    case IFLA_PARENT_DEV_BUS_NAME: return "IFLA_PARENT_DEV_BUS_NAME";
    default: return nullptr;
  }
}

const char* InfoName(uint16_t type) {
  return type == IFLA_INFO_KIND ? "IFLA_INFO_KIND" : nullptr;
}

const char* IfaName(uint16_t type) {
  switch (type) {
    case IFA_ADDRESS: return "IFA_ADDRESS";
    case IFA_LOCAL: return "IFA_LOCAL";
    default: return nullptr;
  }
}

const char* TypeName(uint16_t type) {
  switch (type) {
    case RTM_NEWLINK: return "RTM_NEWLINK";
    case RTM_DELLINK: return "RTM_DELLINK";
    case RTM_NEWADDR: return "RTM_NEWADDR";
    default: return "message";
  }
}

// A u32 IFLA_* attribute's value; kInvalidArgument naming it when the payload is too short.
StatusOr<uint32_t> U32Of(const nl::Attr& a) {
  if (auto v = a.U32()) return *v;
  return InvalidArgumentError(std::string(IflaName(a.type)) + " has " +
                              std::to_string(a.payload.size()) + " bytes, needs 4");
}

std::string FormatMac(std::span<const uint8_t> b) {
  std::string out;
  char part[4];
  for (size_t i = 0; i < b.size(); ++i) {
    std::snprintf(part, sizeof(part), i ? ":%02x" : "%02x", b[i]);
    out += part;
  }
  return out;
}

// The family header (struct ifinfomsg, struct ifaddrmsg) that starts m's payload, when m is of
// type `type` or `other_type`; `types` and `struct_name` name them in errors.
template <typename Hdr>
StatusOr<Hdr> FamilyHeader(const nl::Message& m, uint16_t type, uint16_t other_type,
                           const char* types, const char* struct_name) {
  if (m.type != type && m.type != other_type) {
    return InvalidArgumentError("type " + std::to_string(m.type) + " is not " + types);
  }
  if (m.payload.size() < sizeof(Hdr)) {
    return InvalidArgumentError(std::to_string(m.payload.size()) + " bytes, shorter than struct " +
                                struct_name);
  }
  Hdr h;
  std::memcpy(&h, m.payload.data(), sizeof(h));
  return h;
}

nl::MessageBuilder StartLink(uint16_t type, uint16_t flags, uint32_t seq, const ifinfomsg& ifi) {
  nl::MessageBuilder b(type, static_cast<uint16_t>(NLM_F_REQUEST | flags), seq);
  b.AppendHeader(&ifi, sizeof(ifi));
  return b;
}

Status DecodeLinkAttrs(std::span<const uint8_t> data, LinkInfo& info, unsigned flags) {
  RDMAK8S_ASSIGN_OR_RETURN(auto attrs, nl::ParseAttrs(data, IflaName));
  // Absent IFLA_OPERSTATE reads as IF_OPER_UNKNOWN, as for drivers that never set it.
  uint8_t oper = IF_OPER_UNKNOWN;
  for (const nl::Attr& a : attrs) {
    switch (a.type) {
      case IFLA_IFNAME: info.name = a.String(); break;
      case IFLA_ADDRESS: info.mac = FormatMac(a.payload); break;
      case IFLA_MTU: {
        RDMAK8S_ASSIGN_OR_RETURN(info.mtu, U32Of(a));
        break;
      }
      case IFLA_LINK: {
        RDMAK8S_ASSIGN_OR_RETURN(uint32_t v, U32Of(a));
        info.link_ifindex = static_cast<int>(v);
        break;
      }
      case IFLA_LINK_NETNSID: {
        RDMAK8S_ASSIGN_OR_RETURN(uint32_t v, U32Of(a));  // s32 in the kernel
        info.link_netnsid = static_cast<int32_t>(v);
        break;
      }
      case IFLA_OPERSTATE: {
        auto v = a.U8();
        if (!v) return InvalidArgumentError("IFLA_OPERSTATE has 0 bytes, needs 1");
        oper = *v;
        break;
      }
      case IFLA_LINKINFO: {
        auto nested = nl::ParseAttrs(a.payload, InfoName);
        if (!nested.ok()) return nested.status().Prepend("IFLA_LINKINFO");
        if (const nl::Attr* kind = nl::FindAttr(*nested, IFLA_INFO_KIND)) {
          info.kind = kind->String();
        }
        break;
      }
      case IFLA_PARENT_DEV_NAME: info.parent_dev = a.String(); break;
      case IFLA_PARENT_DEV_BUS_NAME: info.parent_bus = a.String(); break;
      default: break;  // attributes rdmak8s does not read (stats, qdisc, af_spec...)
    }
  }
  info.oper_up = oper == IF_OPER_UP || (oper == IF_OPER_UNKNOWN && (flags & IFF_RUNNING));
  return Status::Ok();
}

}  // namespace

std::vector<uint8_t> BuildGetLink(uint32_t seq, int ifindex, std::string_view name) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  nl::MessageBuilder b = StartLink(RTM_GETLINK, NLM_F_ACK, seq, ifi);
  if (!name.empty()) b.PutString(IFLA_IFNAME, name);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildDumpLinks(uint32_t seq) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  return StartLink(RTM_GETLINK, NLM_F_DUMP, seq, ifi).Finish();
}

std::vector<uint8_t> BuildSetLinkUp(uint32_t seq, int ifindex, bool up) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  ifi.ifi_flags = up ? IFF_UP : 0;
  ifi.ifi_change = IFF_UP;
  return StartLink(RTM_NEWLINK, NLM_F_ACK, seq, ifi).Finish();
}

std::vector<uint8_t> BuildMoveLinkToNetns(uint32_t seq, int ifindex, uint32_t netns_fd,
                                          std::string_view new_name) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  nl::MessageBuilder b = StartLink(RTM_NEWLINK, NLM_F_ACK, seq, ifi);
  b.PutU32(IFLA_NET_NS_FD, netns_fd);
  if (!new_name.empty()) b.PutString(IFLA_IFNAME, new_name);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildDumpAddresses(uint32_t seq) {
  nl::MessageBuilder b(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, seq);
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_UNSPEC;
  b.AppendHeader(&ifa, sizeof(ifa));
  return std::move(b).Finish();
}

StatusOr<LinkInfo> ParseLink(const nl::Message& m) {
  const std::string what = std::string("decode ") + TypeName(m.type);
  auto hdr = FamilyHeader<ifinfomsg>(m, RTM_NEWLINK, RTM_DELLINK, "RTM_NEWLINK or RTM_DELLINK",
                                     "ifinfomsg");
  if (!hdr.ok()) return hdr.status().Prepend(what);
  const ifinfomsg& ifi = *hdr;
  LinkInfo info;
  info.ifindex = ifi.ifi_index;
  info.admin_up = ifi.ifi_flags & IFF_UP;
  Status s = DecodeLinkAttrs(m.payload.subspan(NLMSG_ALIGN(sizeof(ifinfomsg))), info,
                             ifi.ifi_flags);
  if (!s.ok()) return s.Prepend(what);
  return info;
}

StatusOr<IpAddress> ParseAddress(const nl::Message& m) {
  const std::string what = std::string("decode ") + TypeName(m.type);
  auto hdr = FamilyHeader<ifaddrmsg>(m, RTM_NEWADDR, RTM_NEWADDR, "RTM_NEWADDR", "ifaddrmsg");
  if (!hdr.ok()) return hdr.status().Prepend(what);
  const ifaddrmsg& ifa = *hdr;
  IpAddress ip;
  ip.family = ifa.ifa_family;
  ip.prefix_len = ifa.ifa_prefixlen;
  ip.ifindex = static_cast<int>(ifa.ifa_index);
  auto attrs = nl::ParseAttrs(m.payload.subspan(NLMSG_ALIGN(sizeof(ifaddrmsg))), IfaName);
  if (!attrs.ok()) return attrs.status().Prepend(what);
  const nl::Attr* a = nl::FindAttr(*attrs, IFA_LOCAL);
  if (a == nullptr) a = nl::FindAttr(*attrs, IFA_ADDRESS);
  size_t want = 0;
  if (ip.family == AF_INET) want = 4;
  if (ip.family == AF_INET6) want = 16;
  if (a == nullptr || want == 0) return ip;
  if (a->payload.size() < want) {
    return InvalidArgumentError(what + ": " + IfaName(a->type) + " has " +
                                std::to_string(a->payload.size()) + " bytes, an " +
                                (want == 4 ? "AF_INET" : "AF_INET6") + " address needs " +
                                std::to_string(want));
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(ip.family, a->payload.data(), text, sizeof(text)) != nullptr) ip.address = text;
  return ip;
}

}  // namespace rdmak8s::rtnl
