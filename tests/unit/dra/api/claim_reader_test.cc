#include "dra/api/claim_reader.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_api_server.h"
#include "support/temp_dir.h"

namespace rdmak8s::dra {
namespace {

using nlohmann::json;

json Claim() {
  return json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "ml", "name": "train-nic", "uid": "claim-uid"},
    "spec": {"devices": {"requests": [{"name": "nic"}, {"name": "gpu"}]}},
    "status": {
      "allocation": {"devices": {
        "results": [
          {"request": "nic", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-1"},
          {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node1", "device": "gpu-0"},
          {"request": "nic2/fast", "driver": "rdma.rdmak8s.io", "pool": "node1", "device": "mlx5-2"}],
        "config": [
          {"source": "FromClass", "opaque": {"driver": "rdma.rdmak8s.io", "parameters": {"ucx": true}}},
          {"source": "FromClaim", "requests": ["nic2"], "opaque": {"driver": "rdma.rdmak8s.io", "parameters": {"nccl": {"ibHca": "mlx5_2"}}}},
          {"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "gpu.nvidia.com", "parameters": {"x": 1}}}]}},
      "reservedFor": [{"resource": "pods", "name": "p0", "uid": "pod-uid-0"},
                      {"resource": "pods", "name": "p1", "uid": "pod-uid-1"}]}})");
}

class ClaimReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start(dir_.path() + "/api.sock"));
    KubeConfig c;
    c.server = server_.url();
    c.unix_socket = dir_.path() + "/api.sock";
    client_ = std::move(*CurlKubeClient::Create(c));
    server_.AddClaim(Claim());
  }
  rdmak8s::testing::TempDir dir_;
  rdmak8s::testing::FakeApiServer server_;
  std::unique_ptr<CurlKubeClient> client_;
};

TEST_F(ClaimReaderTest, TakesOurDriversResultsReservationsAndConfig) {
  ApiClaimReader reader(client_.get(), "rdma.rdmak8s.io", ResourceApiVersion::kV1);
  auto v = reader.Read("ml", "train-nic", "claim-uid");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->namespace_, "ml");
  EXPECT_EQ(v->uid, "claim-uid");
  EXPECT_EQ(v->results, (std::vector<AllocatedDevice>{{"nic", "rdma.rdmak8s.io", "node1", "mlx5-1"},
                                                      {"nic2/fast", "rdma.rdmak8s.io", "node1", "mlx5-2"}}));
  EXPECT_EQ(v->reserved_for_pod_uids, (std::vector<std::string>{"pod-uid-0", "pod-uid-1"}));
  EXPECT_EQ(json::parse(v->opaque_config.at("nic")), json::parse(R"([{"ucx": true}])"));
  EXPECT_EQ(json::parse(v->opaque_config.at("nic2/fast")),
            json::parse(R"([{"ucx": true}, {"nccl": {"ibHca": "mlx5_2"}}])"));
}

TEST_F(ClaimReaderTest, ReadsThroughV1beta1Too) {
  ApiClaimReader reader(client_.get(), "rdma.rdmak8s.io", ResourceApiVersion::kV1beta1);
  auto v = reader.Read("ml", "train-nic", "claim-uid");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->results.size(), 2u);
  EXPECT_EQ(server_.CountRequests("GET /apis/resource.k8s.io/v1beta1/namespaces/ml/resourceclaims/train-nic"), 1);
}

TEST_F(ClaimReaderTest, AnotherUidIsAFailedPrecondition) {
  ApiClaimReader reader(client_.get(), "rdma.rdmak8s.io", ResourceApiVersion::kV1);
  auto v = reader.Read("ml", "train-nic", "old-uid");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(v.status().message().find("old-uid"), std::string::npos);
}

TEST_F(ClaimReaderTest, AMissingClaimIsNotFoundNamingIt) {
  ApiClaimReader reader(client_.get(), "rdma.rdmak8s.io", ResourceApiVersion::kV1);
  auto v = reader.Read("ml", "gone", "u");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kNotFound);
  EXPECT_NE(v.status().message().find("/namespaces/ml/resourceclaims/gone"), std::string::npos);
}

TEST_F(ClaimReaderTest, AnUnallocatedClaimIsAFailedPrecondition) {
  json c = Claim();
  c["metadata"]["name"] = "pending";
  c["status"].erase("allocation");
  server_.AddClaim(c);
  ApiClaimReader reader(client_.get(), "rdma.rdmak8s.io", ResourceApiVersion::kV1);
  auto v = reader.Read("ml", "pending", "claim-uid");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(v.status().message().find("not allocated"), std::string::npos);
}

TEST(ParseResourceClaimTest, GarbageIsInvalidArgument) {
  EXPECT_EQ(ParseResourceClaim("{", "d", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseResourceClaim(R"({"metadata": {}})", "d", "").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdmak8s::dra
