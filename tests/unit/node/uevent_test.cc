// Kernel uevents of RDMA devices (node/uevent.h): the parser on bytes, the source over a
// socketpair (the seam the daemon tests use), and the real kernel socket on a veth pair.
#include "node/uevent.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rdmak8s::node {
namespace {

using namespace std::string_literals;

// What ib_register_device() sends for `rdma link add rxe0 type rxe netdev veth0`.
const std::string kRxeAdd =
    "add@/devices/virtual/infiniband/rxe0\0ACTION=add\0DEVPATH=/devices/virtual/infiniband/rxe0\0"
    "SUBSYSTEM=infiniband\0NAME=rxe0\0SEQNUM=4711\0"s;

TEST(UeventTest, ParsesAKernelDatagram) {
  auto ev = ParseUevent(kRxeAdd);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->action, "add");
  EXPECT_EQ(ev->subsystem, "infiniband");
  EXPECT_EQ(ev->devpath, "/devices/virtual/infiniband/rxe0");
  EXPECT_EQ(ev->env.at("NAME"), "rxe0");
  EXPECT_EQ(ev->env.at("SEQNUM"), "4711");
}

TEST(UeventTest, RejectsUdevMessagesAndMalformedDatagrams) {
  EXPECT_FALSE(ParseUevent("libudev\0\xfe\xed\xca\xfe"s + "ACTION=add\0SUBSYSTEM=infiniband\0"s));
  EXPECT_FALSE(ParseUevent(""));
  EXPECT_FALSE(ParseUevent("add@/devices/x\0DEVPATH=/devices/x\0"s)) << "no ACTION/SUBSYSTEM";
  EXPECT_FALSE(ParseUevent("@/devices/x\0ACTION=add\0SUBSYSTEM=net\0"s)) << "no action in header";
  // No trailing NUL after the last variable is still read.
  auto ev = ParseUevent("remove@/devices/x/infiniband/mlx5_0\0ACTION=remove\0SUBSYSTEM=infiniband"s);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->subsystem, "infiniband");
}

// One kernel datagram and the device events it becomes, as "<rdma_dev> <what>".
struct UeventCase {
  const char* name;
  std::string datagram;
  std::vector<std::string> events;
};

class UeventDeviceEventsTest : public ::testing::TestWithParam<UeventCase> {};

TEST_P(UeventDeviceEventsTest, AnInfinibandAddRemoveOrRenameBecomesDeviceEvents) {
  auto ev = ParseUevent(GetParam().datagram);
  ASSERT_TRUE(ev);
  std::vector<std::string> got;
  for (const auto& e : RdmaDeviceEventsOf(*ev)) got.push_back(e.rdma_dev + " " + e.what);
  EXPECT_EQ(got, GetParam().events);
}

INSTANTIATE_TEST_SUITE_P(
    Uevents, UeventDeviceEventsTest,
    ::testing::Values(
        UeventCase{"Add", kRxeAdd, {"rxe0 registered"}},
        // Without NAME= the device is the last DEVPATH component.
        UeventCase{"RemoveWithoutName",
                   "remove@/devices/pci0000:00/0000:00:02.0/0000:3b:00.0/infiniband/mlx5_0\0"
                   "ACTION=remove\0DEVPATH=/devices/pci0000:00/0000:00:02.0/0000:3b:00.0/"
                   "infiniband/mlx5_0\0SUBSYSTEM=infiniband\0"s,
                   {"mlx5_0 unregistered"}},
        UeventCase{"Rename",
                   "move@/devices/virtual/infiniband/roce0\0ACTION=move\0DEVPATH=/devices/virtual/"
                   "infiniband/roce0\0DEVPATH_OLD=/devices/virtual/infiniband/rxe0\0"
                   "SUBSYSTEM=infiniband\0NAME=roce0\0"s,
                   {"rxe0 unregistered", "roce0 registered"}},
        // A netns move re-publishes the device under the same name: a re-read, never
        // "unregistered".
        UeventCase{"NetnsMove",
                   "move@/devices/virtual/infiniband/rxe_slot2\0ACTION=move\0DEVPATH=/devices/"
                   "virtual/infiniband/rxe_slot2\0DEVPATH_OLD=/devices/virtual/infiniband/"
                   "rxe_slot2\0SUBSYSTEM=infiniband\0NAME=rxe_slot2\0"s,
                   {"rxe_slot2 registered"}},
        UeventCase{"NetdevAddIsNone",
                   "add@/devices/virtual/net/veth0\0ACTION=add\0SUBSYSTEM=net\0"
                   "INTERFACE=veth0\0"s,
                   {}},
        UeventCase{"InfinibandChangeIsNone",
                   "change@/devices/virtual/infiniband/rxe0\0ACTION=change\0"
                   "SUBSYSTEM=infiniband\0"s,
                   {}}),
    [](const ::testing::TestParamInfo<UeventCase>& info) { return std::string(info.param.name); });

TEST(UeventTest, SourceReadsEveryQueuedDatagramFromItsFd) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
  auto src = NewUeventSourceOnFd(sv[0]);
  std::string net = "add@/devices/virtual/net/veth9\0ACTION=add\0SUBSYSTEM=net\0"s;
  ASSERT_EQ(write(sv[1], net.data(), net.size()), static_cast<ssize_t>(net.size()));
  ASSERT_EQ(write(sv[1], kRxeAdd.data(), kRxeAdd.size()), static_cast<ssize_t>(kRxeAdd.size()));
  std::vector<DeviceEvent> got;
  ASSERT_TRUE(src->ReadEvents([&](const DeviceEvent& e) { got.push_back(e); }).ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rdma_dev, "rxe0");
  got.clear();
  ASSERT_TRUE(src->ReadEvents([&](const DeviceEvent& e) { got.push_back(e); }).ok()) << "nothing queued: OK";
  EXPECT_TRUE(got.empty());
  close(sv[1]);
}

// The real kernel socket: a veth pair created here produces "add@.../net/<name>" datagrams that
// the socket receives and ParseUevent reads. (No RDMA device can be registered on this host; the
// infiniband filtering is covered above on the same bytes the kernel sends.)
TEST(UeventTest, KernelSocketReceivesAndParsesRealUevents) {
  auto src = NewKernelUeventSource();
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  std::string a = "uev" + std::to_string(getpid() % 100000) + "a";
  std::string b = "uev" + std::to_string(getpid() % 100000) + "b";
  std::string cmd = "ip link add " + a + " type veth peer name " + b + " 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "cannot create a veth pair here";
  bool seen = false;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!seen && std::chrono::steady_clock::now() < until) {
    pollfd p{(*src)->fd(), POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[8192];
    ssize_t n;
    while ((n = recv((*src)->fd(), buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
      auto ev = ParseUevent(std::string_view(buf, static_cast<size_t>(n)));
      if (ev && ev->subsystem == "net" && ev->action == "add" && ev->env["INTERFACE"] == a) seen = true;
    }
  }
  (void)!std::system(("ip link del " + a + " 2>/dev/null").c_str());
  EXPECT_TRUE(seen) << "no add uevent for " << a;
}

}  // namespace
}  // namespace rdmak8s::node
