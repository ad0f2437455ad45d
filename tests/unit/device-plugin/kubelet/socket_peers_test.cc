// Counting the connections open to a socket we listen on, on /proc/net/unix's text and on a real
// listener (kubelet/socket_peers.h).
#include "device-plugin/kubelet/socket_peers.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace rdmak8s::dp {
namespace {

// As Linux prints it: a listener (flags 00010000, state 01), two accepted sockets (state 03: one
// bound by gRPC as "///k/..."), one
// of another listener whose path our path is a prefix of, and an unnamed socket.
constexpr char kProcNetUnix[] =
    "Num       RefCount Protocol Flags    Type St Inode Path\n"
    "000000009c8980c3: 00000002 00000000 00010000 0001 01 159254 /k/.rdmak8s.7.1.sock\n"
    "0000000010e55e01: 00000003 00000000 00000000 0001 03 159256 /k/.rdmak8s.7.1.sock\n"
    "0000000010e55e02: 00000002 00000000 00000000 0001 03 159257 ///k/.rdmak8s.7.1.sock\n"
    "0000000010e55e03: 00000003 00000000 00000000 0001 03 159258 /k/.rdmak8s.7.12.sock\n"
    "0000000010e55e04: 00000003 00000000 00000000 0001 03 159259\n"
    "garbage /k/.rdmak8s.7.1.sock\n";

TEST(SocketPeersTest, CountsTheAcceptedConnectionsOfOneListenerOnly) {
  EXPECT_EQ(CountAcceptedConnections(kProcNetUnix, "/k/.rdmak8s.7.1.sock"), 2);
  EXPECT_EQ(CountAcceptedConnections(kProcNetUnix, "/k/.rdmak8s.7.12.sock"), 1);
  EXPECT_EQ(CountAcceptedConnections(kProcNetUnix, "/k/.rdmak8s.7.2.sock"), 0);
  EXPECT_EQ(CountAcceptedConnections("", "/k/x.sock"), 0);
  EXPECT_EQ(CountAcceptedConnections(kProcNetUnix, "/k//.rdmak8s.7.1.sock"), 2);
}

TEST(SocketPeersTest, FollowsARealConnectionFromAcceptToClose) {
  const std::string dir = rdmak8s::testing::NewTempDir();
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/l.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(l, 4), 0);
  EXPECT_EQ(AcceptedConnections(path).value(), 0);
  int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  int a = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(a, 0);
  EXPECT_EQ(AcceptedConnections(path).value(), 1);
  close(c);
  close(a);
  EXPECT_EQ(AcceptedConnections(path).value(), 0);
  close(l);
  EXPECT_EQ(AcceptedConnections(path, dir + "/no-proc").status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rdmak8s::dp
