// RouteNetlink: the rtnetlink operations rdmak8s needs on netdevs, and LinkMonitor, the link
// event stream health checks are driven by.
//
// Each instance is bound to the netns it was opened in (NewRouteNetlink opens it in the calling
// thread's current netns); to act inside a pod, open one inside RunInNetns (netns.h).
// Real tests run against veth pairs in throwaway namespaces.
//
// Thread safety: one instance per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s {

struct LinkInfo {
  int ifindex = 0;
  std::string name;
  std::string mac;          // "aa:bb:cc:dd:ee:ff", lower case; empty when none
  bool admin_up = false;    // IFF_UP
  bool oper_up = false;     // IFF_RUNNING / operstate UP
  std::string kind;         // IFLA_INFO_KIND ("veth", "macvlan", "ipoib"); empty for hardware
  int link_ifindex = 0;     // IFLA_LINK (lower device of macvlan/ipvlan/vlan/ipoib child), 0 if none
  // IFLA_LINK_NETNSID: the id (in this link's netns) of the netns link_ifindex lives in, when
  // that is another netns (a macvlan moved into a pod from the node); -1 when absent, i.e. the
  // lower device is in the same netns as this link.
  int link_netnsid = -1;
  // Linux 5.16+. Empty on older kernels and for virtual links: use /sys/class/net/<if>/device
  // then.
  std::string parent_bus;   // IFLA_PARENT_DEV_BUS_NAME ("pci"), when the kernel reports it
  std::string parent_dev;   // IFLA_PARENT_DEV_NAME ("0000:3b:00.2"), when the kernel reports it
  uint32_t mtu = 0;
};

struct IpAddress {
  int family = 0;           // AF_INET | AF_INET6
  std::string address;      // textual, no prefix: "10.0.0.2", "fe80::1"
  int prefix_len = 0;
  int ifindex = 0;
};

// Reading links (RTM_GETLINK).
class LinkLookup {
 public:
  virtual ~LinkLookup() = default;
  // kNotFound when there is no such link in this netns.
  virtual StatusOr<LinkInfo> GetLinkByName(std::string_view name) = 0;
  virtual StatusOr<LinkInfo> GetLinkByIndex(int ifindex) = 0;
  virtual StatusOr<LinkInfo> GetLinkByMac(std::string_view mac) = 0;
  virtual StatusOr<std::vector<LinkInfo>> ListLinks() = 0;
};

// Changing links (RTM_NEWLINK on an existing link).
class LinkControl {
 public:
  virtual ~LinkControl() = default;
  // RTM_NEWLINK with IFLA_NET_NS_FD (and IFLA_IFNAME when new_name is non-empty).
  // kAlreadyExists when new_name is taken in the target; the kernel has then already moved the
  // link under its old name, and this moves it back, so a failed call leaves the link here.
  virtual Status MoveLinkToNetns(std::string_view name, int netns_fd,
                                 std::string_view new_name = {}) = 0;
  virtual Status SetLinkUp(std::string_view name, bool up) = 0;
};

// Reading addresses (RTM_GETADDR).
class AddressLookup {
 public:
  virtual ~AddressLookup() = default;
  // Addresses of one link (ifindex > 0) or of all links (ifindex == 0), both families.
  virtual StatusOr<std::vector<IpAddress>> ListAddresses(int ifindex) = 0;
};

// The three roles over one rtnetlink socket, as NewRouteNetlink opens it. Code that needs one
// role takes that interface; this composition adds nothing.
class RouteNetlink : public LinkLookup, public LinkControl, public AddressLookup {};

StatusOr<std::unique_ptr<RouteNetlink>> NewRouteNetlink();

struct LinkEvent {
  enum class Type { kNew, kDel } type = Type::kNew;
  LinkInfo link;
};

// A subscription to RTNLGRP_LINK in the netns it was opened in. Event-loop friendly: poll fd()
// for readability, then call ReadEvents(), which never blocks and delivers each queued event.
// On socket overrun (ENOBUFS) it reports kUnavailable: the caller must re-read full state.
class LinkMonitor {
 public:
  virtual ~LinkMonitor() = default;
  virtual int fd() const = 0;
  virtual Status ReadEvents(const std::function<void(const LinkEvent&)>& on_event) = 0;
};

StatusOr<std::unique_ptr<LinkMonitor>> NewLinkMonitor();

}  // namespace rdmak8s
