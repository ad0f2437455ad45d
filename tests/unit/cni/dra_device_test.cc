#include "cni/dra_device.h"

#include <gtest/gtest.h>

namespace rdmak8s::cni {
namespace {

PodClaimRecord Claim(const std::string& name, std::vector<PodClaimDevice> devices) {
  return {"team", name, "uid-" + name, std::move(devices)};
}
PodClaimDevice Dev(const std::string& request, const std::string& rdma_dev) {
  return {request, "rdma.rdmak8s.io", "node-a", "dev-" + rdma_dev, rdma_dev, "0000:5e:00.2"};
}

TEST(PickDraDeviceTest, TheOnlyPreparedDeviceIsTaken) {
  auto c = PickDraDevice({Claim("nic", {Dev("rdma", "mlx5_1")})}, "pod-1", "team", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, (DraChoice{"mlx5_1", "0000:5e:00.2", "team/nic", "rdma"}));
}

TEST(PickDraDeviceTest, ADeviceNotYetPreparedDoesNotCount) {
  auto c = PickDraDevice({Claim("nic", {Dev("rdma", ""), Dev("rdma2", "mlx5_2")})}, "pod-1", "team", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rdma_dev, "mlx5_2");
}

TEST(PickDraDeviceTest, TheSameDeviceInTwoClaimsIsOneDevice) {
  auto c = PickDraDevice({Claim("a", {Dev("rdma", "mlx5_1")}), Claim("b", {Dev("rdma", "mlx5_1")})},
                         "pod-1", "team", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->claim, "team/a");
}

TEST(PickDraDeviceTest, NoDeviceIsNotFoundNamingThePod) {
  auto c = PickDraDevice({Claim("nic", {})}, "pod-1", "team", "");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("pod pod-1"), std::string::npos) << c.status().message();
}

TEST(PickDraDeviceTest, SeveralDevicesWithoutARequestListTheCandidates) {
  auto c = PickDraDevice({Claim("nics", {Dev("east", "mlx5_1"), Dev("west", "mlx5_2")})}, "pod-1", "team", "");
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  const std::string m = c.status().message();
  EXPECT_NE(m.find("team/nics/east (mlx5_1)"), std::string::npos) << m;
  EXPECT_NE(m.find("team/nics/west (mlx5_2)"), std::string::npos) << m;
  EXPECT_NE(m.find("draRequest"), std::string::npos) << m;
}

TEST(PickDraDeviceTest, ARequestNamesItsDeviceBySubrequestParentOrClaim) {
  std::vector<PodClaimRecord> rs = {Claim("nics", {Dev("east", "mlx5_1"), Dev("west/fast", "mlx5_2")}),
                                    Claim("more", {Dev("east", "mlx5_3")})};
  auto west = PickDraDevice(rs, "pod-1", "team", "west");  // a prioritized list's subrequest got it
  ASSERT_TRUE(west.ok()) << west.status().ToString();
  EXPECT_EQ(west->rdma_dev, "mlx5_2");
  auto exact = PickDraDevice(rs, "pod-1", "team", "west/fast");
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(exact->rdma_dev, "mlx5_2");
  auto by_claim = PickDraDevice(rs, "pod-1", "team", "more/east");
  ASSERT_TRUE(by_claim.ok()) << by_claim.status().ToString();
  EXPECT_EQ(by_claim->rdma_dev, "mlx5_3");
  // "east" is a request of both claims: which one is not for us to guess.
  auto both = PickDraDevice(rs, "pod-1", "team", "east");
  EXPECT_EQ(both.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(both.status().message().find("team/nics/east (mlx5_1)"), std::string::npos);
  EXPECT_NE(both.status().message().find("team/more/east (mlx5_3)"), std::string::npos);
}

TEST(PickDraDeviceTest, ARequestThatMatchesNothingListsWhatThePodHolds) {
  auto c = PickDraDevice({Claim("nics", {Dev("east", "mlx5_1")})}, "pod-1", "team", "north");
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("\"north\""), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("team/nics/east (mlx5_1)"), std::string::npos) << c.status().message();
}

TEST(ValidDraRequestTest, RequestSubrequestAndClaimNamesOnly) {
  for (auto ok : {"rdma", "nic-0", "nics/east", "west/fast", "my.claim/nic", "a/b/c"}) {
    EXPECT_TRUE(ValidDraRequest(ok)) << ok;
  }
  for (auto bad : {"", "/x", "x/", "a//b", "a/b/c/d", "../x", "Nic", "a b", "a;b", "a\nb"}) {
    EXPECT_FALSE(ValidDraRequest(bad)) << bad;
  }
  EXPECT_FALSE(ValidDraRequest(std::string(254, 'a')));
}

}  // namespace
}  // namespace rdmak8s::cni

namespace rdmak8s::cni {
namespace {

// Issue 24 item 5: a record of another namespace's claim is never wired into the pod.
TEST(PickDraDeviceTest, AClaimOfAnotherNamespaceIsRefusedNamingBoth) {
  PodClaimRecord foreign{"kube-system", "sm-nic", "uid-sm", {Dev("rdma", "mlx5_1")}};
  for (const std::string request : {"", "rdma"}) {
    auto c = PickDraDevice({foreign}, "pod-1", "team", request);
    ASSERT_FALSE(c.ok()) << request;
    EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(c.status().message().find("\"kube-system\""), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("\"team\""), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find("K8S_POD_NAMESPACE"), std::string::npos) << c.status().message();
  }
  // Beside a claim of the pod's own namespace too: the records as a whole are suspect.
  auto mixed = PickDraDevice({Claim("nic", {Dev("rdma", "mlx5_2")}), foreign}, "pod-1", "team", "");
  EXPECT_EQ(mixed.status().code(), StatusCode::kPermissionDenied);
}

TEST(PickDraDeviceTest, WithoutThePodsNamespaceNoRecordIsTaken) {
  auto c = PickDraDevice({Claim("nic", {Dev("rdma", "mlx5_1")})}, "pod-1", "", "");
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("K8S_POD_NAMESPACE"), std::string::npos) << c.status().message();
}

TEST(DraClaimHoldingTest, NamesTheClaimThatHoldsThePreparedDevice) {
  auto c = DraClaimHolding({Claim("a", {Dev("rdma", "mlx5_1")}), Claim("b", {Dev("rdma", "mlx5_2")})},
                           "pod-1", "team", "mlx5_2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ(**c, (DraChoice{"mlx5_2", "0000:5e:00.2", "team/b", "rdma"}));
}

TEST(DraClaimHoldingTest, ADeviceNoClaimOfThePodHoldsIsNone) {
  // Another tenant's device, and an unprepared device of the pod's own claim.
  auto c = DraClaimHolding({Claim("a", {Dev("rdma", "mlx5_1"), Dev("late", "")})}, "pod-1", "team", "mlx5_0");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->has_value());
  c = DraClaimHolding({}, "pod-1", "team", "mlx5_0");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->has_value());
}

TEST(DraClaimHoldingTest, ARecordOfAnotherNamespaceIsRefusedAsForPick) {
  PodClaimRecord theirs{"tenant-a", "nic", "uid-nic", {Dev("rdma", "mlx5_0")}};
  auto c = DraClaimHolding({theirs}, "pod-1", "tenant-b", "mlx5_0");
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status().ToString();
  c = DraClaimHolding({theirs}, "pod-1", "", "mlx5_0");
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
}

}  // namespace
}  // namespace rdmak8s::cni
