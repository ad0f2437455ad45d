// RouteNetlink and LinkMonitor over rtnetlink. Requests are built and replies decoded with
// libnl-route (rtnl_link / rtnl_addr); the bytes travel through NetlinkChannel.
//
// libnl 3.7 does not decode IFLA_PARENT_DEV_NAME / IFLA_PARENT_DEV_BUS_NAME (Linux 5.16+), so
// those two are read from the raw RTM_NEWLINK attributes here; on older kernels they stay empty
// (callers wanting the PCI parent then fall back to /sys/class/net/<if>/device).
#include "rdmak8s/route_netlink.h"

#include <arpa/inet.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/msg.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include <fcntl.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "netlink_channel.h"
#include "rdmak8s/netns.h"

namespace rdmak8s {
namespace {

using internal::NetlinkChannel;

std::string FormatMac(nl_addr* a) {
  if (a == nullptr || nl_addr_get_len(a) == 0) return "";
  const auto* b = static_cast<const uint8_t*>(nl_addr_get_binary_addr(a));
  std::string out;
  char part[4];
  for (unsigned i = 0; i < nl_addr_get_len(a); ++i) {
    std::snprintf(part, sizeof(part), i ? ":%02x" : "%02x", b[i]);
    out += part;
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Decodes one message with libnl's cache ops for its type (rtnl_link, rtnl_addr).
template <typename Obj>
Obj* ParseObject(const nl::Message& m) {
  // nlmsg_convert copies from a full header; rebuild it around the payload.
  std::vector<uint8_t> bytes(NLMSG_HDRLEN + m.payload.size());
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(bytes.size());
  h.nlmsg_type = m.type;
  h.nlmsg_flags = m.flags;
  h.nlmsg_seq = m.seq;
  h.nlmsg_pid = m.port;
  std::memcpy(bytes.data(), &h, sizeof(h));
  std::memcpy(bytes.data() + NLMSG_HDRLEN, m.payload.data(), m.payload.size());
  nl_msg* msg = nlmsg_convert(reinterpret_cast<nlmsghdr*>(bytes.data()));
  if (msg == nullptr) return nullptr;
  nlmsg_set_proto(msg, NETLINK_ROUTE);
  Obj* out = nullptr;
  nl_msg_parse(
      msg,
      [](nl_object* obj, void* arg) {
        nl_object_get(obj);
        *static_cast<Obj**>(arg) = reinterpret_cast<Obj*>(obj);
      },
      &out);
  nlmsg_free(msg);
  return out;
}

StatusOr<LinkInfo> DecodeLink(const nl::Message& m) {
  rtnl_link* link = ParseObject<rtnl_link>(m);
  if (link == nullptr) return InternalError("decode RTM_NEWLINK: libnl could not parse it");
  LinkInfo info;
  info.ifindex = rtnl_link_get_ifindex(link);
  if (const char* name = rtnl_link_get_name(link)) info.name = name;
  info.mac = FormatMac(rtnl_link_get_addr(link));
  unsigned flags = rtnl_link_get_flags(link);
  info.admin_up = flags & IFF_UP;
  uint8_t oper = rtnl_link_get_operstate(link);
  info.oper_up = oper == IF_OPER_UP || (oper == IF_OPER_UNKNOWN && (flags & IFF_RUNNING));
  if (const char* kind = rtnl_link_get_type(link)) info.kind = kind;
  info.link_ifindex = rtnl_link_get_link(link);
  info.mtu = rtnl_link_get_mtu(link);
  rtnl_link_put(link);

  if (m.payload.size() >= NLMSG_ALIGN(sizeof(ifinfomsg))) {
    auto attrs = nl::ParseAttrs(m.payload.subspan(NLMSG_ALIGN(sizeof(ifinfomsg))));
    if (attrs.ok()) {
      if (auto* a = nl::FindAttr(*attrs, IFLA_PARENT_DEV_NAME)) info.parent_dev = a->String();
      if (auto* a = nl::FindAttr(*attrs, IFLA_PARENT_DEV_BUS_NAME)) info.parent_bus = a->String();
      if (auto* a = nl::FindAttr(*attrs, IFLA_LINK_NETNSID)) {
        if (auto v = a->U32()) info.link_netnsid = static_cast<int32_t>(*v);
      }
    }
  }
  return info;
}

std::vector<uint8_t> Bytes(nl_msg* msg, uint16_t extra_flags) {
  nlmsghdr* h = nlmsg_hdr(msg);
  h->nlmsg_flags |= NLM_F_REQUEST | extra_flags;
  std::vector<uint8_t> out(reinterpret_cast<uint8_t*>(h),
                           reinterpret_cast<uint8_t*>(h) + h->nlmsg_len);
  nlmsg_free(msg);
  return out;
}

class LibnlRouteNetlink : public RouteNetlink {
 public:
  LibnlRouteNetlink(std::unique_ptr<NetlinkChannel> ch, Netns home)
      : ch_(std::move(ch)), home_(std::move(home)) {}

  StatusOr<LinkInfo> GetLinkByName(std::string_view name) override {
    if (name.empty() || name.size() >= IFNAMSIZ) {
      return InvalidArgumentError("get link '" + std::string(name) + "': bad interface name");
    }
    return GetOne(0, std::string(name), "get link " + std::string(name));
  }

  StatusOr<LinkInfo> GetLinkByIndex(int ifindex) override {
    if (ifindex <= 0) {
      return InvalidArgumentError("get link #" + std::to_string(ifindex) + ": bad ifindex");
    }
    return GetOne(ifindex, "", "get link #" + std::to_string(ifindex));
  }

  StatusOr<LinkInfo> GetLinkByMac(std::string_view mac) override {
    RDMAK8S_ASSIGN_OR_RETURN(auto links, ListLinks());
    const std::string want = Lower(mac);
    for (auto& l : links) {
      if (!want.empty() && l.mac == want) return l;
    }
    return NotFoundError("get link with MAC " + std::string(mac) + ": no such link");
  }

  StatusOr<std::vector<LinkInfo>> ListLinks() override {
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    nl_msg* msg = nlmsg_alloc_simple(RTM_GETLINK, NLM_F_DUMP);
    if (msg == nullptr || nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
      if (msg) nlmsg_free(msg);
      return InternalError("list links: out of memory");
    }
    std::vector<LinkInfo> links;
    RDMAK8S_RETURN_IF_ERROR(ch_->Transact(
        Bytes(msg, 0),
        [&](const nl::Message& m) -> Status {
          if (m.type != RTM_NEWLINK) return Status::Ok();
          RDMAK8S_ASSIGN_OR_RETURN(auto l, DecodeLink(m));
          links.push_back(std::move(l));
          return Status::Ok();
        },
        "list links"));
    return links;
  }

  Status MoveLinkToNetns(std::string_view name, int netns_fd, std::string_view new_name) override {
    std::string what = "move link " + std::string(name) + " to netns fd " +
                       std::to_string(netns_fd);
    if (!new_name.empty()) {
      what += " as " + std::string(new_name);
      if (new_name.size() >= IFNAMSIZ) return InvalidArgumentError(what + ": name too long");
    }
    if (netns_fd < 0) return InvalidArgumentError(what + ": bad netns fd");
    RDMAK8S_ASSIGN_OR_RETURN(LinkInfo l, GetLinkByName(name));
    Status moved = Change(l, what, [&](rtnl_link* changes) {
      rtnl_link_set_ns_fd(changes, netns_fd);
      if (!new_name.empty()) rtnl_link_set_name(changes, std::string(new_name).c_str());
    });
    if (moved.code() != StatusCode::kAlreadyExists || new_name.empty()) return moved;
    // do_setlink moves the link first and renames it after: when new_name is taken in the
    // target, the kernel answers EEXIST with the link already there under its old name.
    // Bring it back so a failed move changes nothing.
    if (GetLinkByName(name).status().code() != StatusCode::kNotFound) return moved;
    Status back = MoveBackFrom(netns_fd, std::string(name));
    if (!back.ok()) return moved.Prepend(back.Prepend("and rolling back failed").message());
    return moved;
  }

  Status SetLinkUp(std::string_view name, bool up) override {
    std::string what = "set link " + std::string(name) + (up ? " up" : " down");
    RDMAK8S_ASSIGN_OR_RETURN(LinkInfo l, GetLinkByName(name));
    return Change(l, what, [&](rtnl_link* changes) {
      if (up) {
        rtnl_link_set_flags(changes, IFF_UP);
      } else {
        rtnl_link_unset_flags(changes, IFF_UP);
      }
    });
  }

  StatusOr<std::vector<IpAddress>> ListAddresses(int ifindex) override {
    ifaddrmsg ifa{};
    ifa.ifa_family = AF_UNSPEC;
    nl_msg* msg = nlmsg_alloc_simple(RTM_GETADDR, NLM_F_DUMP);
    if (msg == nullptr || nlmsg_append(msg, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0) {
      if (msg) nlmsg_free(msg);
      return InternalError("list addresses: out of memory");
    }
    std::vector<IpAddress> out;
    RDMAK8S_RETURN_IF_ERROR(ch_->Transact(
        Bytes(msg, 0),
        [&](const nl::Message& m) -> Status {
          if (m.type != RTM_NEWADDR) return Status::Ok();
          rtnl_addr* a = ParseObject<rtnl_addr>(m);
          if (a == nullptr) return InternalError("decode RTM_NEWADDR: libnl could not parse it");
          IpAddress ip;
          ip.family = rtnl_addr_get_family(a);
          ip.prefix_len = rtnl_addr_get_prefixlen(a);
          ip.ifindex = rtnl_addr_get_ifindex(a);
          nl_addr* local = rtnl_addr_get_local(a);
          char text[INET6_ADDRSTRLEN] = {};
          if (local != nullptr &&
              inet_ntop(ip.family, nl_addr_get_binary_addr(local), text, sizeof(text))) {
            ip.address = text;
          }
          rtnl_addr_put(a);
          if ((ifindex == 0 || ip.ifindex == ifindex) && !ip.address.empty() &&
              (ip.family == AF_INET || ip.family == AF_INET6)) {
            out.push_back(std::move(ip));
          }
          return Status::Ok();
        },
        "list addresses"));
    return out;
  }

 private:
  StatusOr<LinkInfo> GetOne(int ifindex, const std::string& name, const std::string& what) {
    nl_msg* msg = nullptr;
    int rc = rtnl_link_build_get_request(ifindex, name.empty() ? nullptr : name.c_str(), &msg);
    if (rc < 0) return InternalError(what + ": build request: " + nl_geterror(rc));
    std::optional<LinkInfo> found;
    Status s = ch_->Transact(
        Bytes(msg, NLM_F_ACK),
        [&](const nl::Message& m) -> Status {
          if (m.type != RTM_NEWLINK) return Status::Ok();
          RDMAK8S_ASSIGN_OR_RETURN(auto l, DecodeLink(m));
          found = std::move(l);
          return Status::Ok();
        },
        what);
    if (!s.ok()) {
      if (s.code() == StatusCode::kNotFound) return NotFoundError(what + ": no such link");
      return s;
    }
    if (!found) return InternalError(what + ": the kernel answered without the link");
    return *found;
  }

  // Moves `name` from the netns of netns_fd back to the one this instance was opened in.
  Status MoveBackFrom(int netns_fd, const std::string& name) {
    int fd = fcntl(netns_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return ErrnoError(errno, "dup netns fd");
    Netns target(fd, "netns fd " + std::to_string(netns_fd));
    return RunInNetns(target, [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(auto there, NewRouteNetlink());
      return there->MoveLinkToNetns(name, home_.fd());
    });
  }

  template <typename Fn>
  Status Change(const LinkInfo& l, const std::string& what, Fn fill) {
    rtnl_link* orig = rtnl_link_alloc();
    rtnl_link* changes = rtnl_link_alloc();
    if (orig == nullptr || changes == nullptr) {
      if (orig) rtnl_link_put(orig);
      if (changes) rtnl_link_put(changes);
      return InternalError(what + ": out of memory");
    }
    rtnl_link_set_ifindex(orig, l.ifindex);
    rtnl_link_set_name(orig, l.name.c_str());
    fill(changes);
    nl_msg* msg = nullptr;
    int rc = rtnl_link_build_change_request(orig, changes, 0, &msg);
    rtnl_link_put(orig);
    rtnl_link_put(changes);
    if (rc < 0) return InternalError(what + ": build request: " + nl_geterror(rc));
    return ch_->Transact(
        Bytes(msg, NLM_F_ACK), [](const nl::Message&) { return Status::Ok(); }, what);
  }

  std::unique_ptr<NetlinkChannel> ch_;
  Netns home_;  // the netns the socket lives in
};

class LibnlLinkMonitor : public LinkMonitor {
 public:
  explicit LibnlLinkMonitor(std::unique_ptr<NetlinkChannel> ch) : ch_(std::move(ch)) {}
  int fd() const override { return ch_->fd(); }

  Status ReadEvents(const std::function<void(const LinkEvent&)>& on_event) override {
    Status decode_error;
    Status s = ch_->Drain([&](const nl::Message& m) {
      if (m.type != RTM_NEWLINK && m.type != RTM_DELLINK) return;
      auto l = DecodeLink(m);
      if (!l.ok()) {
        if (decode_error.ok()) decode_error = l.status().Prepend("link event");
        return;
      }
      LinkEvent ev;
      ev.type = m.type == RTM_NEWLINK ? LinkEvent::Type::kNew : LinkEvent::Type::kDel;
      ev.link = std::move(*l);
      on_event(ev);
    });
    if (!s.ok()) return s.Prepend("read link events");
    return decode_error;
  }

 private:
  std::unique_ptr<NetlinkChannel> ch_;
};

}  // namespace

StatusOr<std::unique_ptr<RouteNetlink>> NewRouteNetlink() {
  RDMAK8S_ASSIGN_OR_RETURN(auto ch, NetlinkChannel::Open(NETLINK_ROUTE, "rtnetlink"));
  RDMAK8S_ASSIGN_OR_RETURN(Netns home, CurrentNetns());
  return std::unique_ptr<RouteNetlink>(new LibnlRouteNetlink(std::move(ch), std::move(home)));
}

StatusOr<std::unique_ptr<LinkMonitor>> NewLinkMonitor() {
  RDMAK8S_ASSIGN_OR_RETURN(auto ch, NetlinkChannel::Open(NETLINK_ROUTE, "rtnetlink"));
  RDMAK8S_RETURN_IF_ERROR(ch->Subscribe(RTNLGRP_LINK));
  return std::unique_ptr<LinkMonitor>(new LibnlLinkMonitor(std::move(ch)));
}

}  // namespace rdmak8s
