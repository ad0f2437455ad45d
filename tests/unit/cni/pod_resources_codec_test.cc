// The pod-resources codec on bytes: kubelet's answers as protoc's own serializer writes them
// (tests/proto/podresources/v1/api.proto), hand-made broken ones, and the bounds.
#include "cni/pod_resources_codec.h"

#include <gtest/gtest.h>

#include "podresources/v1/api.pb.h"

namespace rdmak8s::cni {
namespace {

v1::ListPodResourcesResponse TwoPods() {
  v1::ListPodResourcesResponse r;
  auto* a = r.add_pod_resources();
  a->set_name("trainer-0");
  a->set_namespace_("tenant-a");
  auto* c = a->add_containers();
  c->set_name("main");
  c->add_cpu_ids(3);
  auto* mem = c->add_memory();
  mem->set_memory_type("hugepages-2Mi");
  mem->set_size(1 << 30);
  auto* d = c->add_devices();
  d->set_resource_name("rdma/roce");
  d->add_device_ids("0000:3b:00.2");
  d->add_device_ids("mlx5_0-3");
  d->mutable_topology()->add_nodes()->set_id(1);
  auto* dyn = c->add_dynamic_resources();
  dyn->set_claim_name("nic");
  dyn->set_claim_namespace("tenant-a");
  dyn->add_claim_resources()->set_device_name("dev-mlx5_1");
  auto* b = r.add_pod_resources();
  b->set_name("web");
  b->set_namespace_("tenant-b");
  b->add_containers()->set_name("nginx");
  return r;
}

TEST(PodResourcesCodecTest, DecodesPodsContainersAndDeviceIdsAndSkipsTheRest) {
  auto pods = DecodeListPodResourcesResponse(TwoPods().SerializeAsString());
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 2u);
  PodResourcesEntry want_a{"trainer-0", "tenant-a",
                           {{"main", {{"rdma/roce", {"0000:3b:00.2", "mlx5_0-3"}}}}}};
  EXPECT_EQ((*pods)[0], want_a);
  PodResourcesEntry want_b{"web", "tenant-b", {{"nginx", {}}}};
  EXPECT_EQ((*pods)[1], want_b);
}

TEST(PodResourcesCodecTest, AnEmptyAnswerIsNoPods) {
  auto pods = DecodeListPodResourcesResponse("");
  ASSERT_TRUE(pods.ok());
  EXPECT_TRUE(pods->empty());
}

TEST(PodResourcesCodecTest, RefusesATruncatedAnswerNamingTheMessage) {
  std::string bytes = TwoPods().SerializeAsString();
  for (size_t cut : {size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    auto pods = DecodeListPodResourcesResponse(std::string_view(bytes).substr(0, cut));
    ASSERT_FALSE(pods.ok()) << "cut at " << cut;
    EXPECT_EQ(pods.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(PodResourcesCodecTest, RefusesAKnownFieldOfTheWrongWireTypeAndGroups) {
  // pod_resources (1) as a varint.
  auto pods = DecodeListPodResourcesResponse(std::string("\x08\x01", 2));
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("pod_resources"), std::string::npos) << pods.status().message();
  // A group (wire type 3) in field 9.
  pods = DecodeListPodResourcesResponse(std::string("\x4b\x4c", 2));
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("wire type 3"), std::string::npos) << pods.status().message();
}

TEST(PodResourcesCodecTest, BoundsPodsContainersDeviceIdsAndStrings) {
  PodResourcesBounds b;
  b.max_pods = 1;
  auto pods = DecodeListPodResourcesResponse(TwoPods().SerializeAsString(), b);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("pods in the answer: more than 1"), std::string::npos)
      << pods.status().message();

  v1::ListPodResourcesResponse many;
  auto* p = many.add_pod_resources();
  p->set_name("p");
  p->set_namespace_("n");
  for (int i = 0; i < 3; ++i) p->add_containers()->set_name("c" + std::to_string(i));
  b = {};
  b.max_containers = 2;
  pods = DecodeListPodResourcesResponse(many.SerializeAsString(), b);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("containers of pod n/p: more than 2"), std::string::npos)
      << pods.status().message();

  b = {};
  b.max_device_ids = 1;
  pods = DecodeListPodResourcesResponse(TwoPods().SerializeAsString(), b);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("device IDs in the answer: more than 1"), std::string::npos)
      << pods.status().message();

  b = {};
  b.max_string_bytes = 8;
  pods = DecodeListPodResourcesResponse(TwoPods().SerializeAsString(), b);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("more than 8"), std::string::npos) << pods.status().message();

  b = {};
  b.max_message_bytes = 10;
  pods = DecodeListPodResourcesResponse(TwoPods().SerializeAsString(), b);
  ASSERT_FALSE(pods.ok());
}

TEST(PodResourcesCodecTest, FramesOneUncompressedMessage) {
  const std::string framed = EncodeGrpcMessage("abc");
  EXPECT_EQ(framed, std::string("\x00\x00\x00\x00\x03" "abc", 8));
  auto m = DecodeGrpcMessage(framed, 100);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, "abc");
  EXPECT_EQ(EncodeGrpcMessage(""), std::string(5, '\0'));
}

TEST(PodResourcesCodecTest, RefusesAShortCompressedOversizeOrDoubleFrame) {
  EXPECT_FALSE(DecodeGrpcMessage(std::string("\x00\x00\x00", 3), 100).ok());
  EXPECT_FALSE(DecodeGrpcMessage(std::string("\x01\x00\x00\x00\x01x", 6), 100).ok());
  auto big = DecodeGrpcMessage(std::string("\x00\x7f\x00\x00\x00", 5), 100);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("more than 100"), std::string::npos) << big.status().message();
  EXPECT_FALSE(DecodeGrpcMessage(EncodeGrpcMessage("a") + EncodeGrpcMessage("b"), 100).ok());
  EXPECT_FALSE(DecodeGrpcMessage(std::string("\x00\x00\x00\x00\x05" "ab", 7), 100).ok());
}

TEST(PodResourcesCodecTest, APodsDeviceIdsAreThoseOfEveryContainerAndResource) {
  std::vector<PodResourcesEntry> pods = {
      {"trainer-0", "tenant-a", {{"main", {{"rdma/roce", {"0000:3b:00.2"}}, {"rdma/ib", {"mlx5_4"}}}},
                                 {"side", {{"rdma/roce", {"mlx5_0-3"}}}}}},
      {"trainer-0", "tenant-b", {{"main", {{"rdma/roce", {"0000:3b:00.3"}}}}}},
      {"idle", "tenant-a", {{"main", {}}}}};
  EXPECT_EQ(PodDeviceIds(pods, "tenant-a", "trainer-0"),
            (std::vector<std::string>{"0000:3b:00.2", "mlx5_4", "mlx5_0-3"}));
  EXPECT_EQ(PodDeviceIds(pods, "tenant-b", "trainer-0"), (std::vector<std::string>{"0000:3b:00.3"}));
  EXPECT_EQ(PodDeviceIds(pods, "tenant-a", "idle"), std::vector<std::string>{});
  EXPECT_EQ(PodDeviceIds(pods, "tenant-c", "trainer-0"), std::nullopt);
}

}  // namespace
}  // namespace rdmak8s::cni
