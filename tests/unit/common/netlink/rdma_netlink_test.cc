// The real RdmaNetlink on this machine. Its kernel may lack RDMA entirely (no NETLINK_RDMA):
// then opening must fail with a clear kUnavailable; with RDMA (the e2e VM) it must list devices.
#include "rdmak8s/netlink/rdma_netlink.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rdmak8s {
namespace {

using ::testing::HasSubstr;

bool KernelHasRdmaNetlink() {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
  if (fd < 0) return false;
  close(fd);
  return true;
}

TEST(RdmaNetlinkTest, OpensWhenTheKernelHasRdmaAndSaysClearlyWhenNot) {
  auto rdma = NewRdmaNetlink();
  if (KernelHasRdmaNetlink()) {
    ASSERT_TRUE(rdma.ok()) << rdma.status().ToString();
    auto devs = (*rdma)->ListDevices();
    EXPECT_TRUE(devs.ok()) << devs.status().ToString();
    auto mode = (*rdma)->GetNetnsMode();
    EXPECT_TRUE(mode.ok()) << mode.status().ToString();
    EXPECT_EQ((*rdma)->MoveToNetns("rdmak8s-no-such-dev", 0).code(), StatusCode::kNotFound);
  } else {
    ASSERT_FALSE(rdma.ok());
    EXPECT_EQ(rdma.status().code(), StatusCode::kUnavailable);
    EXPECT_THAT(rdma.status().message(), HasSubstr("RDMA netlink not available"));
    EXPECT_THAT(rdma.status().message(), HasSubstr("Protocol not supported"));
  }
}

TEST(RdmaNetlinkTest, ModeNamesAreIproute2s) {
  EXPECT_EQ(RdmaNetnsModeName(RdmaNetnsMode::kShared), "shared");
  EXPECT_EQ(RdmaNetnsModeName(RdmaNetnsMode::kExclusive), "exclusive");
}

}  // namespace
}  // namespace rdmak8s
