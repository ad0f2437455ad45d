// FakeRouteNetlink: in-memory LinkLookup + AddressLookup, the read side of rtnetlink, for tests
// of code that only looks at links and addresses (the node check). Answers like the kernel:
// a link that was never added is kNotFound; ListAddresses(0) lists every link's addresses.
// Changing links (LinkControl) is left to the real implementation over veth pairs.
//
// Thread safety: none; tests only.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s {

class FakeRouteNetlink : public LinkLookup, public AddressLookup {
 public:
  // Adds (or replaces) a link; ifindex is assigned when 0. Returns it for further setup.
  LinkInfo& AddLink(const std::string& name, uint32_t mtu = 1500) {
    LinkInfo l;
    l.ifindex = next_ifindex_++;
    l.name = name;
    l.mtu = mtu;
    l.admin_up = l.oper_up = true;
    return links_[name] = l;
  }
  void AddAddress(const std::string& link, const std::string& address, int prefix_len = 24) {
    IpAddress a;
    a.family = address.find(':') == std::string::npos ? 2 /*AF_INET*/ : 10 /*AF_INET6*/;
    a.address = address;
    a.prefix_len = prefix_len;
    a.ifindex = links_.at(link).ifindex;
    addresses_.push_back(a);
  }

  StatusOr<LinkInfo> GetLinkByName(std::string_view name) override {
    auto it = links_.find(std::string(name));
    if (it == links_.end()) return NotFoundError("link " + std::string(name) + ": No such device");
    return it->second;
  }
  StatusOr<LinkInfo> GetLinkByIndex(int ifindex) override {
    for (const auto& [n, l] : links_) {
      if (l.ifindex == ifindex) return l;
    }
    return NotFoundError("link index " + std::to_string(ifindex) + ": No such device");
  }
  StatusOr<LinkInfo> GetLinkByMac(std::string_view mac) override {
    for (const auto& [n, l] : links_) {
      if (l.mac == mac) return l;
    }
    return NotFoundError("link with MAC " + std::string(mac) + ": No such device");
  }
  StatusOr<std::vector<LinkInfo>> ListLinks() override {
    std::vector<LinkInfo> out;
    for (const auto& [n, l] : links_) out.push_back(l);
    return out;
  }
  StatusOr<std::vector<IpAddress>> ListAddresses(int ifindex) override {
    std::vector<IpAddress> out;
    for (const IpAddress& a : addresses_) {
      if (ifindex == 0 || a.ifindex == ifindex) out.push_back(a);
    }
    return out;
  }

 private:
  std::map<std::string, LinkInfo> links_;
  std::vector<IpAddress> addresses_;
  int next_ifindex_ = 2;
};

}  // namespace rdmak8s
