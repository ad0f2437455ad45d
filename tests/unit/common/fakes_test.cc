// The fakes other components test against must behave like the kernel they stand in for.
#include <fcntl.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_dcb_netlink.h"
#include "fakes/fake_rdma_netlink.h"

namespace rdmak8s {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(FakeRdmaNetlinkTest, MoveInExclusiveModeShowsDeviceInTargetNetnsOnly) {
  auto world = std::make_shared<FakeRdmaNetlink::World>();
  FakeRdmaNetlink host(world);
  host.AddDevice("mlx5_0");
  host.AddDevice("mlx5_1");
  int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(host.MoveToNetns("mlx5_1", fd).ok());
  FakeRdmaNetlink pod(world, FakeRdmaNetlink::NetnsKey(fd));
  auto in_pod = pod.ListDevices();
  ASSERT_TRUE(in_pod.ok());
  ASSERT_EQ(in_pod->size(), 1u);
  EXPECT_EQ((*in_pod)[0].name, "mlx5_1");
  EXPECT_THAT(host.DeviceNamesIn("host"), ElementsAre("mlx5_0"));
  EXPECT_EQ(host.MoveToNetns("mlx5_1", fd).code(), StatusCode::kNotFound);
  close(fd);
}

TEST(FakeRdmaNetlinkTest, SharedModeAndSiwRefuseMoves) {
  auto world = std::make_shared<FakeRdmaNetlink::World>();
  FakeRdmaNetlink host(world);
  host.AddDevice("siw0");
  world->no_netns_support.insert("siw0");
  EXPECT_EQ(host.MoveToNetns("siw0", 0).code(), StatusCode::kUnimplemented);
  world->mode = RdmaNetnsMode::kShared;
  Status s = host.MoveToNetns("siw0", 0);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("shared"));
}

TEST(FakeRdmaNetlinkTest, InjectedFailureHitsOnlyTheNextCall) {
  FakeRdmaNetlink host;
  host.world().fail_list = InternalError("boom");
  EXPECT_EQ(host.ListDevices().status().code(), StatusCode::kInternal);
  EXPECT_TRUE(host.ListDevices().ok());
}

TEST(FakeDcbNetlinkTest, UnsupportedNetdevIsUnimplementedAndUnknownIsNotFound) {
  FakeDcbNetlink dcb;
  dcb.AddNetdev("veth0").unsupported = true;
  EXPECT_EQ(dcb.GetPfc("veth0").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(dcb.GetPfc("nope").status().code(), StatusCode::kNotFound);
}

TEST(FakeDcbNetlinkTest, AppTableAddIsIdempotentAndDelOfAbsentEntryIsNotFound) {
  FakeDcbNetlink dcb;
  dcb.AddNetdev("eth0");
  DcbAppEntry e{.selector = kDcbAppSelDscp, .protocol = 26, .priority = 3};
  ASSERT_TRUE(dcb.AddApp("eth0", {e, e}).ok());
  EXPECT_THAT(*dcb.GetApp("eth0"), ElementsAre(e));
  ASSERT_TRUE(dcb.DelApp("eth0", {e}).ok());
  EXPECT_THAT(*dcb.GetApp("eth0"), IsEmpty());
  EXPECT_EQ(dcb.DelApp("eth0", {e}).code(), StatusCode::kNotFound);
}

TEST(FakeDcbNetlinkTest, TrustWithoutTableIsUnimplemented) {
  FakeDcbNetlink dcb;
  dcb.AddNetdev("eth0").trust = std::nullopt;
  EXPECT_EQ(dcb.GetTrust("eth0").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(dcb.SetTrust("eth0", DcbTrust::kDscp).code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace rdmak8s
