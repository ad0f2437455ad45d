// RouteNetlink and LinkMonitor over rtnetlink: bytes from rtnl_codec, I/O through
// NetlinkChannel.
#include "rdmak8s/netlink/route_netlink.h"

#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <fcntl.h>

#include <cctype>
#include <cerrno>

#include "netlink/netlink_channel.h"
#include "rdmak8s/netlink/netns.h"
#include "rdmak8s/netlink/rtnl_codec.h"

namespace rdmak8s {
namespace {

using internal::NetlinkChannel;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class ChannelRouteNetlink : public RouteNetlink {
 public:
  ChannelRouteNetlink(std::unique_ptr<NetlinkChannel> ch, Netns home)
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
    std::vector<LinkInfo> links;
    RDMAK8S_RETURN_IF_ERROR(ch_->Transact(
        rtnl::BuildDumpLinks(0),
        [&](const nl::Message& m) -> Status {
          if (m.type != RTM_NEWLINK) return Status::Ok();
          RDMAK8S_ASSIGN_OR_RETURN(auto l, rtnl::ParseLink(m));
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
    // A new name equal to the old one is no rename (as `ip link set ... name` skips it).
    const std::string_view rename = new_name == l.name ? std::string_view() : new_name;
    Status moved = Change(
        rtnl::BuildMoveLinkToNetns(0, l.ifindex, static_cast<uint32_t>(netns_fd), rename), what);
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
    return Change(rtnl::BuildSetLinkUp(0, l.ifindex, up), what);
  }

  StatusOr<std::vector<IpAddress>> ListAddresses(int ifindex) override {
    std::vector<IpAddress> out;
    RDMAK8S_RETURN_IF_ERROR(ch_->Transact(
        rtnl::BuildDumpAddresses(0),
        [&](const nl::Message& m) -> Status {
          if (m.type != RTM_NEWADDR) return Status::Ok();
          RDMAK8S_ASSIGN_OR_RETURN(IpAddress ip, rtnl::ParseAddress(m));
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
    std::optional<LinkInfo> found;
    Status s = ch_->Transact(
        rtnl::BuildGetLink(0, ifindex, name),
        [&](const nl::Message& m) -> Status {
          if (m.type != RTM_NEWLINK) return Status::Ok();
          RDMAK8S_ASSIGN_OR_RETURN(auto l, rtnl::ParseLink(m));
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

  // Sends an RTM_NEWLINK change that expects only an ACK.
  Status Change(std::vector<uint8_t> request, const std::string& what) {
    return ch_->Transact(
        std::move(request), [](const nl::Message&) { return Status::Ok(); }, what);
  }

  std::unique_ptr<NetlinkChannel> ch_;
  Netns home_;  // the netns the socket lives in
};

class ChannelLinkMonitor : public LinkMonitor {
 public:
  explicit ChannelLinkMonitor(std::unique_ptr<NetlinkChannel> ch) : ch_(std::move(ch)) {}
  int fd() const override { return ch_->fd(); }

  Status ReadEvents(const std::function<void(const LinkEvent&)>& on_event) override {
    Status decode_error;
    Status s = ch_->Drain([&](const nl::Message& m) {
      if (m.type != RTM_NEWLINK && m.type != RTM_DELLINK) return;
      auto l = rtnl::ParseLink(m);
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
  return std::unique_ptr<RouteNetlink>(new ChannelRouteNetlink(std::move(ch), std::move(home)));
}

StatusOr<std::unique_ptr<LinkMonitor>> NewLinkMonitor() {
  RDMAK8S_ASSIGN_OR_RETURN(auto ch, NetlinkChannel::Open(NETLINK_ROUTE, "rtnetlink"));
  RDMAK8S_RETURN_IF_ERROR(ch->Subscribe(RTNLGRP_LINK));
  return std::unique_ptr<LinkMonitor>(new ChannelLinkMonitor(std::move(ch)));
}

}  // namespace rdmak8s
