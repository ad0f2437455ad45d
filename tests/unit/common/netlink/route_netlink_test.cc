// RouteNetlink against the real kernel: veth pairs in throwaway namespaces (needs root).
#include "rdmak8s/netlink/route_netlink.h"

#include <sys/socket.h>

#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/throwaway_netns.h"

namespace rdmak8s {
namespace {

using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::NewThrowawayNetns;
using testing::ShIn;

// Two empty namespaces; `a` holds a veth pair va <-> vb with fixed MACs.
class RouteNetlinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = NewThrowawayNetns();
    auto b = NewThrowawayNetns();
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    a_ = std::move(*a);
    b_ = std::move(*b);
    Status s = ShIn(a_, "ip link add va address 02:00:00:aa:bb:01 type veth peer name vb "
                        "address 02:00:00:aa:bb:02");
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Runs fn with a RouteNetlink opened inside ns.
  Status In(const Netns& ns, const std::function<Status(RouteNetlink&)>& fn) {
    return RunInNetns(ns, [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(auto rt, NewRouteNetlink());
      return fn(*rt);
    });
  }

  Netns a_, b_;
};

TEST_F(RouteNetlinkTest, GetsLinkByNameIndexAndMac) {
  Status s = In(a_, [](RouteNetlink& rt) -> Status {
    auto va = rt.GetLinkByName("va");
    EXPECT_TRUE(va.ok()) << va.status().ToString();
    if (!va.ok()) return Status::Ok();
    EXPECT_EQ(va->name, "va");
    EXPECT_EQ(va->kind, "veth");
    EXPECT_EQ(va->mac, "02:00:00:aa:bb:01");
    EXPECT_FALSE(va->admin_up);
    EXPECT_EQ(va->mtu, 1500u);
    EXPECT_GT(va->ifindex, 0);
    // veth reports its peer as IFLA_LINK; it has no parent device.
    EXPECT_GT(va->link_ifindex, 0);
    EXPECT_EQ(va->parent_dev, "");

    auto by_index = rt.GetLinkByIndex(va->ifindex);
    EXPECT_TRUE(by_index.ok());
    if (by_index.ok()) {
      EXPECT_EQ(by_index->name, "va");
    }

    auto by_mac = rt.GetLinkByMac("02:00:00:AA:BB:02");
    EXPECT_TRUE(by_mac.ok()) << by_mac.status().ToString();
    if (by_mac.ok()) {
      EXPECT_EQ(by_mac->name, "vb");
    }
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, ReportsTheNetnsOfTheLowerDeviceOnlyWhenItIsAnotherOne) {
  // A macvlan made on va in a_ then moved into b_ names its lower by IFLA_LINK_NETNSID; one made
  // in b_ on a link of b_ has none. (macvlan: this kernel has no vlan/ipvlan; same attribute.)
  ASSERT_TRUE(ShIn(a_, "ip link add mv0 link va type macvlan mode bridge").ok());
  ASSERT_TRUE(In(a_, [&](RouteNetlink& rt) { return rt.MoveLinkToNetns("mv0", b_.fd()); }).ok());
  ASSERT_TRUE(ShIn(b_, "ip link add lo0 type veth peer name lo1 && ip link add link lo0 name lo0.7 type macvlan mode bridge").ok());
  Status s = In(b_, [](RouteNetlink& rt) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto mv, rt.GetLinkByName("mv0"));
    EXPECT_EQ(mv.kind, "macvlan");
    EXPECT_GT(mv.link_ifindex, 0);
    EXPECT_GE(mv.link_netnsid, 0) << "lower device in another netns";
    RDMAK8S_ASSIGN_OR_RETURN(auto local, rt.GetLinkByName("lo0.7"));
    RDMAK8S_ASSIGN_OR_RETURN(auto lower, rt.GetLinkByName("lo0"));
    EXPECT_EQ(local.link_ifindex, lower.ifindex);
    EXPECT_EQ(local.link_netnsid, -1) << "lower device in the same netns";
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, MissingLinkIsNotFoundByNameIndexAndMac) {
  Status s = In(a_, [](RouteNetlink& rt) -> Status {
    auto by_name = rt.GetLinkByName("nosuch0");
    EXPECT_EQ(by_name.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(by_name.status().message(), HasSubstr("nosuch0"));
    EXPECT_EQ(rt.GetLinkByIndex(99999).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(rt.GetLinkByMac("02:00:00:00:00:99").status().code(), StatusCode::kNotFound);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, BadNameIsInvalidArgument) {
  Status s = In(a_, [](RouteNetlink& rt) -> Status {
    EXPECT_EQ(rt.GetLinkByName("").status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(rt.GetLinkByName("a-name-longer-than-ifnamsiz").status().code(),
              StatusCode::kInvalidArgument);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, ListsEveryLinkOfItsNetnsOnly) {
  Status s = In(a_, [](RouteNetlink& rt) -> Status {
    auto links = rt.ListLinks();
    EXPECT_TRUE(links.ok()) << links.status().ToString();
    if (!links.ok()) return Status::Ok();
    std::vector<std::string> names;
    for (auto& l : *links) names.push_back(l.name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"lo", "va", "vb"}));
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, SetsLinkUpAndDown) {
  Status s = In(a_, [](RouteNetlink& rt) -> Status {
    RDMAK8S_RETURN_IF_ERROR(rt.SetLinkUp("va", true));
    RDMAK8S_ASSIGN_OR_RETURN(auto up, rt.GetLinkByName("va"));
    EXPECT_TRUE(up.admin_up);
    RDMAK8S_RETURN_IF_ERROR(rt.SetLinkUp("va", false));
    RDMAK8S_ASSIGN_OR_RETURN(auto down, rt.GetLinkByName("va"));
    EXPECT_FALSE(down.admin_up);
    EXPECT_FALSE(down.oper_up);
    EXPECT_EQ(rt.SetLinkUp("nosuch0", true).code(), StatusCode::kNotFound);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, ListsAddressesOfBothFamiliesPerLink) {
  ASSERT_TRUE(ShIn(a_, "ip addr add 10.77.0.1/24 dev va").ok());
  ASSERT_TRUE(ShIn(a_, "ip -6 addr add fd00:77::1/64 dev va nodad").ok());
  ASSERT_TRUE(ShIn(a_, "ip addr add 10.78.0.1/16 dev vb").ok());
  Status s = In(a_, [](RouteNetlink& rt) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto va, rt.GetLinkByName("va"));
    RDMAK8S_ASSIGN_OR_RETURN(auto of_va, rt.ListAddresses(va.ifindex));
    auto has = [](const std::vector<IpAddress>& v, int fam, const std::string& addr, int len) {
      return std::any_of(v.begin(), v.end(), [&](const IpAddress& a) {
        return a.family == fam && a.address == addr && a.prefix_len == len;
      });
    };
    EXPECT_TRUE(has(of_va, AF_INET, "10.77.0.1", 24));
    EXPECT_TRUE(has(of_va, AF_INET6, "fd00:77::1", 64));
    EXPECT_FALSE(has(of_va, AF_INET, "10.78.0.1", 16));
    for (const auto& a : of_va) EXPECT_EQ(a.ifindex, va.ifindex);
    RDMAK8S_ASSIGN_OR_RETURN(auto all, rt.ListAddresses(0));
    EXPECT_TRUE(has(all, AF_INET, "10.77.0.1", 24));
    EXPECT_TRUE(has(all, AF_INET, "10.78.0.1", 16));
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, MovesLinkToNetnsWithNewNameAndBack) {
  Status s = In(a_, [&](RouteNetlink& rt) { return rt.MoveLinkToNetns("vb", b_.fd(), "net1"); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = In(a_, [](RouteNetlink& rt) -> Status {
    EXPECT_EQ(rt.GetLinkByName("vb").status().code(), StatusCode::kNotFound);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = In(b_, [&](RouteNetlink& rt) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto net1, rt.GetLinkByName("net1"));
    EXPECT_EQ(net1.mac, "02:00:00:aa:bb:02");
    RDMAK8S_RETURN_IF_ERROR(rt.SetLinkUp("net1", true));
    // Back to a_ under its old name, as a CNI DEL does.
    return rt.MoveLinkToNetns("net1", a_.fd(), "vb");
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = In(a_, [](RouteNetlink& rt) -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto vb, rt.GetLinkByName("vb"));
    EXPECT_EQ(vb.mac, "02:00:00:aa:bb:02");
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, MoveOntoATakenNameFailsAndLeavesTheLinkInPlace) {
  ASSERT_TRUE(ShIn(b_, "ip link add net1 type veth peer name net1p").ok());
  Status s = In(a_, [&](RouteNetlink& rt) -> Status {
    Status move = rt.MoveLinkToNetns("vb", b_.fd(), "net1");
    EXPECT_EQ(move.code(), StatusCode::kAlreadyExists) << move.ToString();
    EXPECT_THAT(move.message(), HasSubstr("vb"));
    // The kernel moved it before failing the rename; it must have been brought back.
    EXPECT_TRUE(rt.GetLinkByName("vb").ok());
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = In(b_, [](RouteNetlink& rt) -> Status {
    EXPECT_EQ(rt.GetLinkByName("vb").status().code(), StatusCode::kNotFound);
    RDMAK8S_ASSIGN_OR_RETURN(auto net1, rt.GetLinkByName("net1"));
    EXPECT_EQ(net1.kind, "veth");
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST_F(RouteNetlinkTest, MovingAMissingLinkIsNotFound) {
  Status s = In(a_, [&](RouteNetlink& rt) -> Status {
    EXPECT_EQ(rt.MoveLinkToNetns("nosuch0", b_.fd()).code(), StatusCode::kNotFound);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
}

size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(RouteNetlinkHostTest, ClosingInstancesReleasesTheirFds) {
  size_t before = OpenFds();
  for (int i = 0; i < 50; ++i) {
    auto rt = NewRouteNetlink();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    auto mon = NewLinkMonitor();
    ASSERT_TRUE(mon.ok()) << mon.status().ToString();
  }
  EXPECT_EQ(OpenFds(), before);
}

// Read-only, in the host netns: every link the kernel ties to a device (/sys/class/net/<if>/device)
// must report that device and its bus as IFLA_PARENT_DEV_NAME / _BUS_NAME (eth0 on virtio here:
// "virtio2" on "virtio"; a PCI NIC: "0000:3b:00.0" on "pci").
TEST(RouteNetlinkHostTest, ParentDeviceMatchesSysfsForLinksWithADevice) {
  namespace fs = std::filesystem;
  auto rt = NewRouteNetlink();
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  auto links = (*rt)->ListLinks();
  ASSERT_TRUE(links.ok()) << links.status().ToString();
  int checked = 0;
  for (const auto& l : *links) {
    fs::path dev = fs::path("/sys/class/net") / l.name / "device";
    std::error_code ec;
    if (!fs::exists(dev, ec)) {
      EXPECT_EQ(l.parent_dev, "") << l.name;
      continue;
    }
    EXPECT_EQ(l.parent_dev, fs::read_symlink(dev, ec).filename().string()) << l.name;
    EXPECT_EQ(l.parent_bus, fs::read_symlink(dev / "subsystem", ec).filename().string())
        << l.name;
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no link with a parent device in this netns";
}

}  // namespace
}  // namespace rdmak8s
