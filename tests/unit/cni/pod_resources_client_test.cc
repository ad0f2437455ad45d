// ListPodResources against a real gRPC server on a unix socket (the fake kubelet's pod-resources
// service, tests/support/fake_pod_resources.h): what it lists, and each way kubelet can fail it.
#include "cni/pod_resources_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cni_test_util.h"
#include "support/fake_pod_resources.h"

namespace rdmak8s::cni {
namespace {

using std::chrono::milliseconds;
using testing::TempDir;

class PodResourcesClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kubelet_.Start().ok()); }
  TempDir tmp_;
  fake::FakePodResources kubelet_{tmp_.path() + "/kubelet.sock"};
};

TEST_F(PodResourcesClientTest, ListsTheDevicesKubeletRecordedForEachPod) {
  kubelet_.RecordAllocation({"tenant-a", "trainer-0", "uid-a"}, "main", "rdma/roce", {"0000:3b:00.2"});
  kubelet_.RecordAllocation({"tenant-a", "trainer-0", "uid-a"}, "side", "rdma/ib", {"mlx5_4"});
  kubelet_.RecordAllocation({"tenant-b", "web", "uid-b"}, "nginx", "rdma/roce", {"mlx5_0-1", "mlx5_0-2"});
  auto pods = ListPodResources(kubelet_.socket_path(), milliseconds(5000));
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 2u);
  PodResourcesEntry a{"trainer-0", "tenant-a",
                      {{"main", {{"rdma/roce", {"0000:3b:00.2"}}}}, {"side", {{"rdma/ib", {"mlx5_4"}}}}}};
  PodResourcesEntry b{"web", "tenant-b", {{"nginx", {{"rdma/roce", {"mlx5_0-1", "mlx5_0-2"}}}}}};
  EXPECT_EQ((*pods)[0], a);
  EXPECT_EQ((*pods)[1], b);
}

TEST_F(PodResourcesClientTest, NoSocketIsNotFoundNamingIt) {
  const std::string path = tmp_.path() + "/none.sock";
  auto pods = ListPodResources(path, milliseconds(5000));
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), StatusCode::kNotFound);
  EXPECT_NE(pods.status().message().find(path), std::string::npos) << pods.status().message();
}

TEST_F(PodResourcesClientTest, AHungKubeletIsADeadlineNamingTheSocket) {
  kubelet_.Hold();
  auto pods = ListPodResources(kubelet_.socket_path(), milliseconds(300));
  kubelet_.Release();
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), StatusCode::kDeadlineExceeded) << pods.status().ToString();
  EXPECT_NE(pods.status().message().find(kubelet_.socket_path()), std::string::npos)
      << pods.status().message();
}

TEST_F(PodResourcesClientTest, ASilentListenerIsADeadlineToo) {
  // Accepts (the backlog does) and never speaks HTTP/2: the call must still end.
  const std::string path = tmp_.path() + "/mute.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  auto pods = ListPodResources(path, milliseconds(200));
  close(fd);
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), StatusCode::kDeadlineExceeded) << pods.status().ToString();
}

TEST_F(PodResourcesClientTest, AnAnswerOverTheBoundIsRefused) {
  v1::ListPodResourcesResponse huge;
  for (int i = 0; i < 200; ++i) {
    auto* p = huge.add_pod_resources();
    p->set_name("pod-" + std::to_string(i));
    p->set_namespace_("ns");
    auto* d = p->add_containers()->add_devices();
    d->set_resource_name("rdma/roce");
    for (int k = 0; k < 20; ++k) d->add_device_ids("mlx5_0-" + std::to_string(k));
  }
  kubelet_.SetListAnswer(huge);
  PodResourcesBounds small;
  small.max_message_bytes = 4096;
  auto pods = ListPodResources(kubelet_.socket_path(), milliseconds(5000), small);
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.status().code(), StatusCode::kInvalidArgument) << pods.status().ToString();
  EXPECT_NE(pods.status().message().find("4096"), std::string::npos) << pods.status().message();
  PodResourcesBounds few;
  few.max_pods = 100;
  pods = ListPodResources(kubelet_.socket_path(), milliseconds(5000), few);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("pods in the answer: more than 100"), std::string::npos)
      << pods.status().message();
  // Within the bounds the same answer is read whole.
  pods = ListPodResources(kubelet_.socket_path(), milliseconds(5000));
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  EXPECT_EQ(pods->size(), 200u);
}

}  // namespace
}  // namespace rdmak8s::cni
