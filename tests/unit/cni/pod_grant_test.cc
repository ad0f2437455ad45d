// A netconf deviceID must name a device the pod was given (cni/pod_grant.h, issue 32 item 1), on
// a device-plugin node: kubelet's pod-resources API (the fake kubelet's, on a real unix socket)
// says which device IDs each pod holds. In-process ADDs over the fixture of plugin_fixture.h.
// The DRA node's side is in plugin_dra_test.cc.
#include <gtest/gtest.h>

#include "plugin_fixture.h"

namespace rdmak8s::cni {
namespace {

constexpr char kUidA[] = "aaaaaaaa-0000-4000-8000-00000000000a";
constexpr char kUidB[] = "bbbbbbbb-0000-4000-8000-00000000000b";

class PodGrantTest : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    // tenant-a's pod got mlx5_1 (its VF, 0000:5e:00.2) from an exclusive pool; tenant-b's got
    // mlx5_2 (0000:5e:00.3).
    Kubelet().RecordAllocation({"tenant-a", "trainer-0", kUidA}, "main", "rdma/roce", {"0000:5e:00.2"});
    Kubelet().RecordAllocation({"tenant-b", "web", kUidB}, "nginx", "rdma/roce", {"0000:5e:00.3"});
  }
  void AsTenantA() {
    cni_args_ = std::string("IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=trainer-0;K8S_POD_UID=") + kUidA;
  }
  void AsTenantB() {
    cni_args_ = std::string("IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-b;K8S_POD_NAME=web;K8S_POD_UID=") + kUidB;
  }
};

TEST_F(PodGrantTest, ADeviceIdNamingAnotherTenantsDeviceIsRefusedBeforeAnythingMoves) {
  Pod b = NewPod("10.79.0.2");
  AsTenantB();
  // The hostile netconf: tenant-b's NAD names tenant-a's device, with QoS for it.
  json conf = Conf("1.0.0", &b, {{"deviceID", "mlx5_1"}, {"qos", {{"roceTos", 106}}}});
  auto out = Run("ADD", "c-b", &b, conf);
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("deviceID \"mlx5_1\""), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("pod tenant-b/web"), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("\"0000:5e:00.3\""), std::string::npos) << "what kubelet gave it: " << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_FALSE(In(b.key, "mlx5_1"));
  EXPECT_EQ(DevAttr("mlx5_1", "tc/1/traffic_class"), "0");
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "0");
  EXPECT_EQ(Records(), 0u);
  EXPECT_TRUE(Originals().empty());

  // tenant-a's own ADD still gets its device.
  Pod a = NewPod("10.79.0.3");
  AddGid("mlx5_1", a.ip);
  AsTenantA();
  out = Run("ADD", "c-a", &a, Conf("1.0.0", &a, {{"deviceID", "0000:5e:00.2"}}));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(a.key, "mlx5_1"));
}

TEST_F(PodGrantTest, ADeviceIdIsTheDeviceKubeletGaveInAnyOfItsNames) {
  Pod b = NewPod("10.79.0.4");
  AddGid("mlx5_2", b.ip);
  AsTenantB();
  // kubelet lists the VF's PCI address; the netconf names the RDMA device, or the address.
  for (const std::string id : {"mlx5_2", "0000:5e:00.3"}) {
    SCOPED_TRACE(id);
    json conf = Conf("1.0.0", &b, {{"deviceID", id}});
    auto out = Run("ADD", "c-b", &b, conf);
    ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
    EXPECT_TRUE(In(b.key, "mlx5_2"));
    ASSERT_EQ(Run("DEL", "c-b", &b, conf).exit_code, 0);
  }
}

TEST_F(PodGrantTest, ASharedPoolIdGivesItsDevice) {
  world_->mode = RdmaNetnsMode::kShared;
  Kubelet().RecordAllocation({"tenant-c", "shared", "uid-c"}, "main", "rdma/shared", {"mlx5_0-3"});
  cni_args_ = "K8S_POD_NAMESPACE=tenant-c;K8S_POD_NAME=shared;K8S_POD_UID=uid-c";
  ASSERT_TRUE(ShIn(node_, "ip link add ens1f0np0 type veth peer name ensx && ip link set ens1f0np0 up && "
                          "ip link set ensx up").ok());
  Pod c = NewPod("10.79.0.5", "ens1f0np0");
  auto gid_writer = StartGidWriter("mlx5_0", &c);
  for (const std::string id : {"mlx5_0-3", "mlx5_0"}) {
    SCOPED_TRACE(id);
    json conf = Conf("1.0.0", &c, {{"deviceID", id}, {"netnsMode", "shared"}});
    auto out = Run("ADD", "c-c", &c, conf);
    ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
    ASSERT_EQ(Run("DEL", "c-c", &c, conf).exit_code, 0);
  }
  // Another device of the node is not the shared pool's.
  auto out = Run("ADD", "c-c", &c, Conf("1.0.0", &c, {{"deviceID", "mlx5_3"}, {"netnsMode", "shared"}}));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("\"mlx5_0-3\""), std::string::npos) << Msg(out);
}

TEST_F(PodGrantTest, ARuntimeConfigDeviceIdIsCheckedTheSameWay) {
  Pod b = NewPod("10.79.0.11");
  AsTenantB();
  auto out = Run("ADD", "c-b", &b, Conf("1.0.0", &b, {{"runtimeConfig", {{"deviceID", "0000:5e:00.2"}}}}));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("deviceID \"0000:5e:00.2\" (RDMA device mlx5_1)"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PodGrantTest, APodKubeletDoesNotKnowGetsNoDevice) {
  Pod p = NewPod("10.79.0.6");
  cni_args_ = "K8S_POD_NAMESPACE=tenant-b;K8S_POD_NAME=intruder;K8S_POD_UID=cccccccc-0000-4000-8000-00000000000c";
  auto out = Run("ADD", "c-x", &p, Conf("1.0.0", &p, {{"deviceID", "mlx5_2"}}));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("pod tenant-b/intruder"), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("lists no device of the pod"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_2"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PodGrantTest, AHungKubeletFailsTheAddWith11NamingItsSocket) {
  Pod b = NewPod("10.79.0.7");
  AsTenantB();
  options_.pod_resources_timeout_ms = 200;
  Kubelet().Hold();
  auto out = Run("ADD", "c-b", &b, Conf("1.0.0", &b, {{"deviceID", "mlx5_2"}}));
  Kubelet().Release();
  EXPECT_EQ(Code(out), kErrTryAgainLater) << out.stdout_data;
  EXPECT_NE(Msg(out).find(options_.node.pod_resources_socket), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("no answer within 200 ms"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_2"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PodGrantTest, NoKubeletSocketFailsTheAddWith11NamingIt) {
  Pod b = NewPod("10.79.0.8");
  AsTenantB();
  options_.node.pod_resources_socket = tmp_.path() + "/no-kubelet.sock";
  auto out = Run("ADD", "c-b", &b, Conf("1.0.0", &b, {{"deviceID", "mlx5_2"}}));
  EXPECT_EQ(Code(out), kErrTryAgainLater) << out.stdout_data;
  EXPECT_NE(Msg(out).find(tmp_.path() + "/no-kubelet.sock"), std::string::npos) << Msg(out);
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PodGrantTest, WithoutKubernetesPodArgsTheDeviceIdIsTheRuntimes) {
  // A runtime the node's admin drives directly (no kubelet, no K8S_POD_*): unchecked, as before.
  Pod p = NewPod("10.79.0.9");
  AddGid("mlx5_1", p.ip);
  cni_args_ = "IgnoreUnknown=1";
  auto out = Run("ADD", "c1", &p, Conf("1.0.0", &p, {{"deviceID", "mlx5_1"}}));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(Kubelet().calls(), 0u);
}

TEST_F(PodGrantTest, OnlyTheNodeConfigurationNamesKubeletsSocket) {
  // A netconf key of that name is no setting: the node's socket is asked, and refuses.
  Pod b = NewPod("10.79.0.10");
  AsTenantB();
  fake::FakePodResources liar(tmp_.path() + "/liar.sock");
  ASSERT_TRUE(liar.Start().ok());
  liar.RecordAllocation({"tenant-b", "web", kUidB}, "nginx", "rdma/roce", {"mlx5_1"});
  json conf = Conf("1.0.0", &b, {{"deviceID", "mlx5_1"}, {"podResourcesSocket", liar.socket_path()}});
  auto out = Run("ADD", "c-b", &b, conf);
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_EQ(liar.calls(), 0u);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
}

}  // namespace
}  // namespace rdmak8s::cni
