// The plugin library end to end, in-process, over the fixture of plugin_fixture.h: real network
// namespaces, veth and macvlan pod interfaces, a copy of a kernel-shaped sysfs fixture tree, and
// FakeRdmaNetlink / FakeDcbNetlink for what this machine's kernel lacks.
#include "cni/plugin.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

#include "cni/spec.h"
#include "cni/state.h"
#include "cni_test_util.h"
#include "fakes/fake_dcb_netlink.h"
#include "fakes/fake_rdma_netlink.h"
#include "plugin_fixture.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/roce_gid.h"
#include "support/sysfs_builder.h"
#include "support/throwaway_netns.h"

namespace rdmak8s::cni {
namespace {

const json kQos = {{"qos", {{"trust", "dscp"}, {"pfc", {3}}, {"dscpToPriority", {{"26", 3}}}, {"ecn", {3}},
                            {"roceTos", 106}, {"trafficClass", 106}}}};

TEST_F(PluginTest, AddExclusiveMovesDeviceIntoPodAndDelBringsItHome) {
  Pod pod = NewPod("10.77.0.2");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "0000:5e:00.2"}});
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  json res = json::parse(out.stdout_data);
  EXPECT_EQ(res, conf["prevResult"]) << "the chained result is the prevResult, unchanged";
  EXPECT_TRUE(In(pod.key, "mlx5_1"));
  EXPECT_FALSE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 1u);
  out = Run("DEL", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(out.stdout_data.empty());
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, DelMovesTheDeviceHomeFromInsideThePodNetns) {
  // The kernel moves a device only when the requesting thread is in the device's netns
  // (rdma_dev_change_netns compares current->nsproxy->net_ns): a pod socket driven from the
  // node's netns gets ENODEV, which must not be taken for "already home".
  Pod pod = NewPod("10.77.0.90");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  ASSERT_TRUE(In(pod.key, "mlx5_1"));
  auto out = Run("DEL", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_FALSE(In(pod.key, "mlx5_1")) << "DEL left the device in the pod";
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, DelFailsAndKeepsTheRecordWhenTheDeviceCannotLeaveThePod) {
  Pod pod = NewPod("10.77.0.91");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  world_->fail_move = ErrnoError(ENODEV, "move RDMA device mlx5_1 to netns");
  auto out = Run("DEL", "c1", &pod, conf);
  EXPECT_EQ(Code(out), kErrWiring) << out.stdout_data;
  EXPECT_NE(Msg(out).find("mlx5_1"), std::string::npos) << Msg(out);
  EXPECT_EQ(Records(), 1u) << "the record stays so a later DEL can retry";
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, RoceTosIsWrittenAfterTheMoveSoItSurvivesTheReRegistration) {
  Pod pod = NewPod("10.77.0.92");
  AddGid("mlx5_1", pod.ip);
  json e = {{"deviceID", "mlx5_1"}, {"qos", {{"roceTos", 106}, {"trafficClass", 106}}}};
  json conf = Conf("1.0.0", &pod, e);
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  ASSERT_TRUE(In(pod.key, "mlx5_1"));
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "106");
  out = Run("CHECK", "c1", &pod, conf);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "0");
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, EveryCommandInEverySpecVersion) {
  Pod pod = NewPod("10.77.0.3");
  AddGid("mlx5_1", pod.ip);
  for (auto v : kSupportedVersions) {
    const std::string ver(v);
    SCOPED_TRACE(ver);
    json conf = Conf(ver, &pod, {{"deviceID", "mlx5_1"}});
    auto out = Run("ADD", "c1", &pod, conf);
    ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
    json res = json::parse(out.stdout_data);
    EXPECT_EQ(res["cniVersion"], ver);
    EXPECT_EQ(res["ips"][0].contains("version"), CompareVersions(ver, "1.0.0") < 0);
    out = Run("CHECK", "c1", &pod, conf);
    if (CompareVersions(ver, "0.4.0") < 0) {
      EXPECT_EQ(Code(out), kErrIncompatibleVersion) << out.stdout_data;
    } else {
      EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
    }
    json plain = Conf(ver, nullptr);
    out = Run("STATUS", "", nullptr, plain);
    if (CompareVersions(ver, "1.1.0") < 0) EXPECT_EQ(Code(out), kErrIncompatibleVersion);
    else EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
    // A GC without cni.dev/valid-attachments is malformed (it would name every attachment of
    // the network stale): refused, and nothing is released.
    out = Run("GC", "", nullptr, plain);
    if (CompareVersions(ver, "1.1.0") < 0) {
      EXPECT_EQ(Code(out), kErrIncompatibleVersion);
    } else {
      EXPECT_EQ(Code(out), kErrInvalidConfig) << out.stdout_data;
      EXPECT_NE(Msg(out).find("cni.dev/valid-attachments"), std::string::npos) << Msg(out);
    }
    EXPECT_EQ(Records(), 1u) << "GC released an attachment";
    EXPECT_TRUE(In(pod.key, "mlx5_1")) << "GC brought the device home";
    out = Run("DEL", "c1", &pod, conf);
    EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
    EXPECT_TRUE(In(node_key_, "mlx5_1"));
    EXPECT_EQ(Records(), 0u);
  }
}

TEST_F(PluginTest, PrevResultInAnOlderShapeIsConvertedToTheConfigVersion) {
  Pod pod = NewPod("10.77.0.4");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  conf["prevResult"]["ips"][0]["version"] = "4";  // a 0.4.0-shaped entry
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_FALSE(json::parse(out.stdout_data)["ips"][0].contains("version"));
}

TEST_F(PluginTest, Add110FillsPciIdOfThePodInterface) {
  Pod pod = NewPod("10.77.0.5");
  AddGid("mlx5_1", pod.ip);
  auto out = Run("ADD", "c1", &pod, Conf("1.1.0", &pod, {{"deviceID", "mlx5_1"}}));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(json::parse(out.stdout_data)["interfaces"][0]["pciID"], "0000:5e:00.2");
}

TEST_F(PluginTest, AddWithoutPrevResultIsCode7AndTouchesNothing) {
  Pod pod = NewPod("10.77.0.6");
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", nullptr, {{"deviceID", "mlx5_1"}}));
  EXPECT_EQ(Code(out), kErrInvalidConfig);
  EXPECT_NE(Msg(out).find("prevResult"), std::string::npos);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, AddWithMissingNetnsIsCode3) {
  Pod pod = NewPod("10.77.0.7");
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  std::map<std::string, std::string> env;
  auto out = [&] {
    PluginOutput o;
    (void)RunInNetns(node_, [&]() -> Status {
      o = RunPlugin(options_, [](const char* k) -> const char* {
        std::string_view key(k);
        if (key == "CNI_COMMAND") return "ADD";
        if (key == "CNI_CONTAINERID") return "c1";
        if (key == "CNI_IFNAME") return "net1";
        if (key == "CNI_NETNS") return "/proc/self/ns/nosuch";
        return nullptr;
      }, conf.dump());
      return Status::Ok();
    });
    return o;
  }();
  EXPECT_EQ(Code(out), kErrUnknownContainer) << out.stdout_data;
}

TEST_F(PluginTest, AddWithoutDeviceIdFollowsMacvlanToItsLowerDevice) {
  world_->mode = RdmaNetnsMode::kShared;
  ASSERT_TRUE(ShIn(node_, "ip link add ens1f0np0 type veth peer name ensx && ip link set ens1f0np0 up && ip link set ensx up").ok());
  Pod pod = NewPod("10.77.0.8", "ens1f0np0");
  auto gid_writer = StartGidWriter("mlx5_0", &pod);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  auto rec = StateStore(state_).Load("rdma", "c1", "net1");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->rdma_dev, "mlx5_0");
  EXPECT_FALSE(rec->moved) << "shared mode moves nothing";
  EXPECT_EQ(rec->netns_mode, "shared");
  EXPECT_EQ(Run("CHECK", "c1", &pod, Conf("1.0.0", &pod)).exit_code, 0);
  EXPECT_EQ(Run("DEL", "c1", &pod, Conf("1.0.0", &pod)).exit_code, 0);
}

TEST_F(PluginTest, AddWithoutDeviceIdOnAVethIsAClearNotFound) {
  Pod pod = NewPod("10.77.0.9");
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("net1"), std::string::npos) << Msg(out);
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, AddWithoutDeviceIdFindsAVfNetdevThroughThePodsSysfsView) {
  // A VF netdev moved into the pod, on a kernel without IFLA_PARENT_DEV_NAME (a veth here has no
  // parent device either): the pod's sysfs view shows its device link.
  Pod pod = NewPod("10.77.0.36", "", "ens1f0v0");
  ASSERT_TRUE(sysfs_world_->MoveNetdev("ens1f0v0", pod.key).ok());
  AddGid("mlx5_1", pod.ip);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, json::object(), "ens1f0v0"), "ens1f0v0");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(StateStore(state_).Load("rdma", "c1", "ens1f0v0")->rdma_dev, "mlx5_1");
  EXPECT_TRUE(In(pod.key, "mlx5_1"));
}

TEST_F(PluginTest, AStackedLinkMadeInsideThePodOnAPodLocalLinkIsResolvedInThePod) {
  // A VF netdev (ens1f0v0 in the fixture) moved into the pod, and a link stacked on it there
  // (a vlan in real life; macvlan here, this kernel has no 8021q): its IFLA_LINK is an ifindex
  // of the POD (no IFLA_LINK_NETNSID), never one of the node.
  Pod pod = NewPod("10.77.0.48", "", "ens1f0v0");
  ASSERT_TRUE(sysfs_world_->MoveNetdev("ens1f0v0", pod.key).ok());
  ASSERT_TRUE(ShIn(pod.ns, "ip link add link ens1f0v0 name net1 type macvlan mode bridge && "
                           "sysctl -qw net.ipv6.conf.net1.disable_ipv6=1 && "
                           "ip addr add 10.77.2.48/24 dev net1 && ip link set net1 up").ok());
  pod.ip = "10.77.2.48";
  AddGid("mlx5_1", pod.ip);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(StateStore(state_).Load("rdma", "c1", "net1")->rdma_dev, "mlx5_1");
  EXPECT_TRUE(In(pod.key, "mlx5_1"));
  EXPECT_EQ(Run("DEL", "c1", &pod, Conf("1.0.0", &pod)).exit_code, 0);
}

TEST_F(PluginTest, AnIpvlanOnAVethFindsTheSoftDeviceOfTheVeth) {
  // rxe over a veth of the node, an ipvlan on it moved into the pod (IFLA_LINK_NETNSID). A
  // kernel without ipvlan (this CI's) gets a macvtap: the same stacked-link path.
  UseFixture("rxe_veth");
  world_->mode = RdmaNetnsMode::kShared;
  FakeRdmaNetlink(world_, node_key_).AddDevice("rxe0");
  ASSERT_TRUE(ShIn(node_, "ip link add veth0 type veth peer name veth1 && ip link set veth0 up").ok());
  Pod pod;
  auto ns = NewThrowawayNetns();
  ASSERT_TRUE(ns.ok());
  pod.ns = std::move(*ns);
  pod.key = FakeRdmaNetlink::NetnsKey(pod.ns.fd());
  pod.ip = "10.77.0.49";
  if (!ShIn(node_, "ip link add ipv0 link veth0 type ipvlan mode l2").ok()) {
    ASSERT_TRUE(ShIn(node_, "ip link add ipv0 link veth0 type macvtap mode bridge").ok());
  }
  ASSERT_TRUE(RunInNetns(node_, [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto rt, NewRouteNetlink());
    return rt->MoveLinkToNetns("ipv0", pod.ns.fd(), "net1");
  }).ok());
  ASSERT_TRUE(ShIn(pod.ns, "sysctl -qw net.ipv6.conf.net1.disable_ipv6=1 && "
                           "ip addr add 10.77.0.49/24 dev net1 && ip link set net1 up").ok());
  SetDevAttr("rxe0", "ports/1/gid_attrs/types/9", "RoCE v2");
  SetDevAttr("rxe0", "ports/1/gids/9", GidForIp(pod.ip));
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(StateStore(state_).Load("rdma", "c1", "net1")->rdma_dev, "rxe0");
  EXPECT_EQ(Run("DEL", "c1", &pod, Conf("1.0.0", &pod)).exit_code, 0);
}

TEST_F(PluginTest, ExclusiveModeFindsAVfNetdevWhoseRdmaDeviceThePodsSysfsDoesNotShowYet) {
  // Kernel without IFLA_PARENT_DEV_NAME, exclusive mode: before the move the pod's sysfs view
  // has the VF netdev (and its device link) but no class/infiniband entry for mlx5_1.
  Pod pod = NewPod("10.77.0.50", "", "ens1f0v0");
  ASSERT_TRUE(sysfs_world_->MoveNetdev("ens1f0v0", pod.key).ok());
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, json::object(), "ens1f0v0");
  auto out = Run("ADD", "c1", &pod, conf, "ens1f0v0");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(StateStore(state_).Load("rdma", "c1", "ens1f0v0")->rdma_dev, "mlx5_1");
  EXPECT_TRUE(In(pod.key, "mlx5_1"));
  EXPECT_EQ(sysfs_world_->NetnsOf("mlx5_1"), pod.key) << "the pod's sysfs shows it now";
  EXPECT_EQ(Run("DEL", "c1", &pod, conf, "ens1f0v0").exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(sysfs_world_->NetnsOf("mlx5_1"), node_key_);
}

TEST_F(PluginTest, AnUnusedDownPortOfAMultiPortDeviceDoesNotFailAdd) {
  // mlx5_ib_2port: port 1 ACTIVE, port 2 DOWN; deviceID without `port`.
  UseFixture("mlx5_ib_2port");
  world_->mode = RdmaNetnsMode::kShared;
  Pod pod = NewPod("10.77.0.51");
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_0"}});
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(StateStore(state_).Load("rdma", "c1", "net1")->ports, std::vector<uint32_t>{1});
  EXPECT_EQ(Run("CHECK", "c1", &pod, conf).exit_code, 0);
  SetDevAttr("mlx5_0", "ports/1/state", "3: ARMED");
  EXPECT_EQ(Code(Run("CHECK", "c1", &pod, conf)), kErrTryAgainLater) << "CHECK watches the port ADD used";
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  SetDevAttr("mlx5_0", "ports/1/state", "2: INIT");
  EXPECT_EQ(Code(Run("ADD", "c1", &pod, conf)), kErrTryAgainLater) << "no ACTIVE port at all";
}

TEST_F(PluginTest, RepeatedAddFindsTheDeviceAlreadyInThePod) {
  Pod pod = NewPod("10.77.0.37");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(pod.key, "mlx5_1"));
  EXPECT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_1")) << "still brought home";
}

TEST_F(PluginTest, AnAddMountsThePodsSysfsViewOnce) {
  // Each view is a sysfs mount made in a forked thread: not one per GID poll or knob access.
  Pod pod = NewPod("10.77.0.38");
  AddGid("mlx5_1", pod.ip);
  json e = kQos;
  e["deviceID"] = "mlx5_1";
  json conf = Conf("1.0.0", &pod, e);
  pod_view_.opens = 0;
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(pod_view_.opens, 1);
  pod_view_.opens = 0;
  ASSERT_EQ(Run("CHECK", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(pod_view_.opens, 1);
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
}

TEST_F(PluginTest, UnknownDeviceIdIsCode100NamingIt) {
  Pod pod = NewPod("10.77.0.10");
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "0000:99:00.1"}}));
  EXPECT_EQ(Code(out), kErrDeviceNotFound);
  EXPECT_NE(Msg(out).find("0000:99:00.1"), std::string::npos);
}

TEST_F(PluginTest, AddWaitsForTheGidToAppear) {
  Pod pod = NewPod("10.77.0.11");
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    AddGid("mlx5_1", pod.ip);
  });
  pod_view_.opens = 0;
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"gidTimeoutMs", 5000}}));
  late.join();
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(pod_view_.opens, 1) << "every GID poll reads the one view of the ADD";
}

TEST_F(PluginTest, MissingGidFailsNamingItAndRollsBackMoveAndQos) {
  Pod pod = NewPod("10.77.0.12");
  json extra = kQos;
  extra["deviceID"] = "mlx5_1";
  extra["gidTimeoutMs"] = 50;
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, extra));
  EXPECT_EQ(Code(out), kErrGidMissing) << out.stdout_data;
  EXPECT_NE(Msg(out).find(GidForIp(pod.ip)), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1")) << "moved back";
  EXPECT_EQ(Pfc(), 0);
  EXPECT_TRUE(dcb_.Find("ens1f0np0")->app.empty());
  EXPECT_EQ(*dcb_.Find("ens1f0np0")->trust, DcbTrust::kPcp);
  EXPECT_EQ(ReadFile(sysfs_ + "/class/net/ens1f0np0/ecn/roce_np/enable/3"), "0");
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "0");
  EXPECT_EQ(DevAttr("mlx5_1", "tc/1/traffic_class"), "0");
  EXPECT_EQ(Records(), 0u);
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, FailedMoveRollsBackQos) {
  Pod pod = NewPod("10.77.0.13");
  AddGid("mlx5_1", pod.ip);
  world_->fail_move = InternalError("move RDMA device mlx5_1: Invalid argument");
  json extra = kQos;
  extra["deviceID"] = "mlx5_1";
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, extra));
  EXPECT_EQ(Code(out), kErrWiring) << out.stdout_data;
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Pfc(), 0);
  EXPECT_TRUE(dcb_.Find("ens1f0np0")->app.empty());
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "0");
  EXPECT_EQ(Records(), 0u);
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, FailingQosStepRollsBackTheQosSettingsAlreadyApplied) {
  Pod pod = NewPod("10.77.0.14");
  AddGid("mlx5_1", pod.ip);
  // Knobs go in id order (app, ecn, pfc, tc, tos, trust): break ToS, after the others applied.
  const std::string tos = configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos";
  ASSERT_EQ(std::system(("rm '" + tos + "' && mkdir '" + tos + "'").c_str()), 0);
  json extra = kQos;
  extra["deviceID"] = "mlx5_1";
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, extra));
  EXPECT_EQ(Code(out), kErrQos) << out.stdout_data;
  EXPECT_NE(Msg(out).find("default_roce_tos"), std::string::npos) << Msg(out);
  EXPECT_EQ(Pfc(), 0);
  EXPECT_TRUE(dcb_.Find("ens1f0np0")->app.empty());
  EXPECT_EQ(ReadFile(sysfs_ + "/class/net/ens1f0np0/ecn/roce_rp/enable/3"), "0");
  EXPECT_EQ(DevAttr("mlx5_1", "tc/1/traffic_class"), "0");
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, UnusableStateDirIsCode104AndTouchesNothing) {
  Pod pod = NewPod("10.77.0.15");
  ASSERT_TRUE(WriteFile(tmp_.path() + "/blocker", "x"));
  options_.node.state_dir = tmp_.path() + "/blocker/state";
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}}));
  EXPECT_EQ(Code(out), kErrState) << out.stdout_data;
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
}

TEST_F(PluginTest, QosIsAppliedAndTheLastAttachmentRestoresNodeWideQosSettings) {
  Pod a = NewPod("10.77.0.16");
  Pod b = NewPod("10.77.0.17");
  AddGid("mlx5_1", a.ip);
  AddGid("mlx5_2", b.ip);
  json ea = kQos, eb = kQos;
  ea["deviceID"] = "mlx5_1";
  eb["deviceID"] = "mlx5_2";
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.0.0", &a, ea)).exit_code, 0);
  EXPECT_EQ(Pfc(), 1 << 3);
  EXPECT_EQ(*dcb_.Find("ens1f0np0")->trust, DcbTrust::kDscp);
  ASSERT_EQ(dcb_.Find("ens1f0np0")->app.size(), 1u);
  EXPECT_EQ(dcb_.Find("ens1f0np0")->app[0].protocol, 26);
  EXPECT_EQ(ReadFile(sysfs_ + "/class/net/ens1f0np0/ecn/roce_np/enable/3"), "1");
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "106");
  EXPECT_EQ(DevAttr("mlx5_1", "tc/1/traffic_class"), "106");
  const int sets = dcb_.set_calls;
  ASSERT_EQ(Run("ADD", "cb", &b, Conf("1.0.0", &b, eb)).exit_code, 0);
  EXPECT_EQ(dcb_.set_calls, sets) << "node-wide knobs already in place: no DCB writes";
  ASSERT_EQ(Run("DEL", "ca", &a, Conf("1.0.0", &a, ea)).exit_code, 0);
  EXPECT_EQ(Pfc(), 1 << 3) << "b still needs PFC on priority 3";
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "0") << "a's own ToS restored";
  ASSERT_EQ(Run("DEL", "cb", &b, Conf("1.0.0", &b, eb)).exit_code, 0);
  EXPECT_EQ(Pfc(), 0);
  EXPECT_EQ(*dcb_.Find("ens1f0np0")->trust, DcbTrust::kPcp);
  EXPECT_TRUE(dcb_.Find("ens1f0np0")->app.empty());
  EXPECT_EQ(ReadFile(sysfs_ + "/class/net/ens1f0np0/ecn/roce_np/enable/3"), "0");
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, SettingsAdminAlreadyHadAreLeftInPlaceOnDel) {
  dcb_.Find("ens1f0np0")->pfc.enabled = 1 << 3;
  Pod a = NewPod("10.77.0.18");
  AddGid("mlx5_1", a.ip);
  json e = {{"deviceID", "mlx5_1"}, {"qos", {{"pfc", {3}}}}};
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.0.0", &a, e)).exit_code, 0);
  ASSERT_EQ(Run("DEL", "ca", &a, Conf("1.0.0", &a, e)).exit_code, 0);
  EXPECT_EQ(Pfc(), 1 << 3);
}

TEST_F(PluginTest, ConflictingQosIsRefusedNamingBothAttachments) {
  Pod a = NewPod("10.77.0.19");
  Pod b = NewPod("10.77.0.20");
  AddGid("mlx5_1", a.ip);
  AddGid("mlx5_2", b.ip);
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.0.0", &a, {{"deviceID", "mlx5_1"},
                                                     {"qos", {{"dscpToPriority", {{"26", 3}}}}}})).exit_code, 0);
  auto out = Run("ADD", "cb", &b, Conf("1.0.0", &b, {{"deviceID", "mlx5_2"},
                                                     {"qos", {{"dscpToPriority", {{"26", 5}}}}}}));
  EXPECT_EQ(Code(out), kErrQos);
  EXPECT_NE(Msg(out).find("rdma/ca:net1"), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("rdma/cb:net1"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_2")) << "nothing done for the refused attachment";
  for (const auto& c : world_->calls) {
    EXPECT_EQ(c.find("mlx5_2"), std::string::npos) << "refused before any move: " << c;
  }
  EXPECT_EQ(dcb_.Find("ens1f0np0")->app[0].priority, 3);
  EXPECT_EQ(Records(), 1u);
}

TEST_F(PluginTest, UnsupportedQosSettingWarnsOrFailsWhenStrict) {
  ASSERT_EQ(std::system(("rm -rf '" + sysfs_ + "/class/net/ens1f0np0/ecn'").c_str()), 0);
  Pod a = NewPod("10.77.0.21");
  AddGid("mlx5_1", a.ip);
  json e = {{"deviceID", "mlx5_1"}, {"qos", {{"ecn", {3}}, {"pfc", {3}}}}};
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.0.0", &a, e)).exit_code, 0);
  EXPECT_EQ(Run("CHECK", "ca", &a, Conf("1.0.0", &a, e)).exit_code, 0) << "unsupported knobs aren't checked";
  ASSERT_EQ(Run("DEL", "ca", &a, Conf("1.0.0", &a, e)).exit_code, 0);
  e["qos"]["strict"] = true;
  auto out = Run("ADD", "ca", &a, Conf("1.0.0", &a, e));
  EXPECT_EQ(Code(out), kErrQos);
  EXPECT_NE(Msg(out).find("ecn"), std::string::npos);
  EXPECT_EQ(Pfc(), 0) << "rolled back";
}

TEST_F(PluginTest, AddFailsWith103WhenDcbNetlinkCannotBeOpened) {
  options_.new_dcb_netlink = []() -> StatusOr<std::unique_ptr<DcbNetlink>> {
    return UnavailableError("open rtnetlink socket: Protocol not supported");
  };
  Pod pod = NewPod("10.77.0.40");
  AddGid("mlx5_1", pod.ip);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"qos", {{"pfc", {3}}}}}));
  EXPECT_EQ(Code(out), kErrQos) << out.stdout_data << " (not strict: still no mere warning)";
  EXPECT_NE(Msg(out).find("DCB"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1")) << "nothing moved";
  EXPECT_EQ(Records(), 0u);
  EXPECT_EQ(Pfc(), 0);
}

TEST_F(PluginTest, DelKeepsTheOriginalOfAQosSettingItCouldNotRestoreAndTheNextDelRestoresIt) {
  Pod pod = NewPod("10.77.0.41");
  AddGid("mlx5_1", pod.ip);
  const std::string log = tmp_.path() + "/cni.log";
  options_.node.log_file = log;
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"qos", {{"pfc", {3}}}}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  ASSERT_EQ(Pfc(), 1 << 3);
  auto working = options_.new_dcb_netlink;
  options_.new_dcb_netlink = []() -> StatusOr<std::unique_ptr<DcbNetlink>> {
    return UnavailableError("open rtnetlink socket: Too many open files");
  };
  auto out = Run("DEL", "c1", &pod, conf);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data << " (DEL does not fail on node-wide QoS)";
  EXPECT_TRUE(In(node_key_, "mlx5_1")) << "the pod's own part is released";
  EXPECT_EQ(Pfc(), 1 << 3) << "PFC could not be written";
  EXPECT_EQ(Originals(), (std::map<std::string, std::string>{{"pfc:ens1f0np0:3", "off"}}))
      << "the original is kept for a retry";
  EXPECT_EQ(ReadFile(log).find("pfc:ens1f0np0:3 restored"), std::string::npos) << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("NOT restored: pfc:ens1f0np0:3"), std::string::npos) << ReadFile(log);
  options_.new_dcb_netlink = working;
  out = Run("DEL", "c1", &pod, conf);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(Pfc(), 0) << "the retried DEL restored it";
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, GcRestoresAQosSettingAnEarlierDelCouldNotRestore) {
  Pod pod = NewPod("10.77.0.52");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.1.0", &pod, {{"deviceID", "mlx5_1"}, {"qos", {{"pfc", {4}}}}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  auto working = options_.new_dcb_netlink;
  options_.new_dcb_netlink = []() -> StatusOr<std::unique_ptr<DcbNetlink>> {
    return UnavailableError("no DCB");
  };
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  ASSERT_EQ(Pfc(), 1 << 4);
  ASSERT_EQ(Records(), 0u);
  options_.new_dcb_netlink = working;
  json gc = Conf("1.1.0", nullptr);
  gc["cni.dev/valid-attachments"] = json::array();
  auto out = Run("GC", "", nullptr, gc);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(Pfc(), 0);
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, AQosSettingLeftUnrestoredIsNotRestoredWhileAnotherAttachmentNeedsIt) {
  Pod a = NewPod("10.77.0.42");
  Pod b = NewPod("10.77.0.43");
  AddGid("mlx5_1", a.ip);
  AddGid("mlx5_2", b.ip);
  json ea = {{"deviceID", "mlx5_1"}, {"qos", {{"pfc", {3}}}}};
  json eb = {{"deviceID", "mlx5_2"}, {"qos", {{"pfc", {3}}}}};
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.0.0", &a, ea)).exit_code, 0);
  auto working = options_.new_dcb_netlink;
  options_.new_dcb_netlink = []() -> StatusOr<std::unique_ptr<DcbNetlink>> {
    return UnavailableError("no DCB");
  };
  ASSERT_EQ(Run("DEL", "ca", &a, Conf("1.0.0", &a, ea)).exit_code, 0);
  options_.new_dcb_netlink = working;
  ASSERT_EQ(Run("ADD", "cb", &b, Conf("1.0.0", &b, eb)).exit_code, 0);
  EXPECT_EQ(Run("DEL", "ca", &a, Conf("1.0.0", &a, ea)).exit_code, 0);
  EXPECT_EQ(Pfc(), 1 << 3) << "b needs it: the retry leaves it";
  ASSERT_EQ(Run("DEL", "cb", &b, Conf("1.0.0", &b, eb)).exit_code, 0);
  EXPECT_EQ(Pfc(), 0);
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, ASecondAttachmentOverTheSameDeviceInThePodDoesNotTakeItHome) {
  // Exclusive mode, one pod, two interfaces over one RDMA device: the second ADD finds the device
  // in the pod already. Whichever attachment leaves first must leave it there for the other.
  Pod pod = NewPod("10.77.0.44");
  ASSERT_TRUE(ShIn(node_, "ip link add t2x type veth peer name ht2x").ok());
  ASSERT_TRUE(RunInNetns(node_, [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto rt, NewRouteNetlink());
    return rt->MoveLinkToNetns("t2x", pod.ns.fd(), "net2");
  }).ok());
  ASSERT_TRUE(ShIn(pod.ns, "ip addr add 10.77.1.44/24 dev net2 && ip link set net2 up").ok());
  AddGid("mlx5_1", pod.ip);
  AddGid("mlx5_1", "10.77.1.44");
  json c1 = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  json c2 = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}}, "net2");
  c2["prevResult"]["ips"][0]["address"] = "10.77.1.44/24";
  for (bool first_leaves_first : {false, true}) {
    SCOPED_TRACE(first_leaves_first ? "net1 leaves first" : "net2 leaves first");
    ASSERT_EQ(Run("ADD", "c1", &pod, c1).exit_code, 0);
    auto out = Run("ADD", "c1", &pod, c2, "net2");
    ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
    EXPECT_FALSE(StateStore(state_).Load("rdma", "c1", "net2")->moved);
    if (first_leaves_first) {
      ASSERT_EQ(Run("DEL", "c1", &pod, c1).exit_code, 0);
    } else {
      ASSERT_EQ(Run("DEL", "c1", &pod, c2, "net2").exit_code, 0);
    }
    EXPECT_TRUE(In(pod.key, "mlx5_1")) << "the other attachment still uses it";
    EXPECT_EQ(Run("CHECK", "c1", &pod, first_leaves_first ? c2 : c1, first_leaves_first ? "net2" : "net1")
                  .exit_code, 0);
    if (first_leaves_first) {
      ASSERT_EQ(Run("DEL", "c1", &pod, c2, "net2").exit_code, 0);
    } else {
      ASSERT_EQ(Run("DEL", "c1", &pod, c1).exit_code, 0);
    }
    EXPECT_TRUE(In(node_key_, "mlx5_1")) << "the last attachment brings it home";
    EXPECT_EQ(Records(), 0u);
  }
}

// Starts ADD of `cid` for `pod` (no GID yet: it waits) in a thread, and returns once its record
// is on disk, i.e. once it is at least about to wait.
std::thread StartWaitingAdd(std::function<PluginOutput()> add, PluginOutput* out,
                            std::atomic<bool>* done, const std::string& state, const std::string& cid) {
  std::thread th([add, out, done] {
    *out = add();
    *done = true;
  });
  while (!StateStore(state).Load("rdma", cid, "net1").ok() && !*done) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return th;
}

TEST_F(PluginTest, AnAddWaitingForItsGidDoesNotBlockOtherAttachments) {
  Pod a = NewPod("10.77.0.45");
  Pod b = NewPod("10.77.0.46");
  AddGid("mlx5_2", b.ip);
  PluginOutput a_out;
  std::atomic<bool> a_done{false};
  json ca = Conf("1.0.0", &a, {{"deviceID", "mlx5_1"}, {"gidTimeoutMs", 20000}});
  std::thread waiter = StartWaitingAdd([&] { return Run("ADD", "ca", &a, ca); }, &a_out, &a_done,
                                       state_, "ca");
  ASSERT_FALSE(a_done) << a_out.stdout_data;
  // A cannot finish before the test writes its GID (or after 20 s, failing): B goes meanwhile.
  json cb = Conf("1.0.0", &b, {{"deviceID", "mlx5_2"}});
  auto out = Run("ADD", "cb", &b, cb);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  out = Run("DEL", "cb", &b, cb);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_FALSE(a_done) << "B's ADD and DEL waited for A's GID wait";
  AddGid("mlx5_1", a.ip);
  waiter.join();
  EXPECT_EQ(a_out.exit_code, 0) << a_out.stdout_data;
  EXPECT_TRUE(In(a.key, "mlx5_1"));
  EXPECT_TRUE(In(node_key_, "mlx5_2"));
  EXPECT_EQ(Run("DEL", "ca", &a, ca).exit_code, 0);
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, AnAddWhoseAttachmentIsDeletedWhileItWaitsForGidsFails) {
  Pod a = NewPod("10.77.0.47");
  PluginOutput a_out;
  std::atomic<bool> a_done{false};
  json ca = Conf("1.0.0", &a, {{"deviceID", "mlx5_1"}, {"gidTimeoutMs", 20000}, {"qos", {{"pfc", {3}}}}});
  std::thread waiter = StartWaitingAdd([&] { return Run("ADD", "ca", &a, ca); }, &a_out, &a_done,
                                       state_, "ca");
  auto out = Run("DEL", "ca", &a, ca);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  AddGid("mlx5_1", a.ip);
  waiter.join();
  EXPECT_EQ(Code(a_out), kErrWiring) << a_out.stdout_data;
  EXPECT_NE(Msg(a_out).find("released"), std::string::npos) << Msg(a_out);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Pfc(), 0);
  EXPECT_EQ(Records(), 0u);
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, DelIsIdempotent) {
  Pod pod = NewPod("10.77.0.22");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  EXPECT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0) << "DEL before ADD";
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0) << "second DEL";
  EXPECT_EQ(Run("DEL", "c1", nullptr, conf).exit_code, 0) << "DEL without netns";
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
}

TEST_F(PluginTest, DelAfterThePodNetnsIsGoneSucceeds) {
  Pod pod = NewPod("10.77.0.23");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  pod.ns = Netns();  // the kernel destroys the netns (and returns the device to init_net)
  auto out = Run("DEL", "c1", nullptr, conf);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(Records(), 0u);
}

// containerd 1.7's CRI (measured in the e2e guest, e2e/README.md): StopPodSandbox's DEL has the
// netns and the ADD result; RemovePodSandbox's second DEL has CNI_NETNS set to "" and no
// prevResult; both DELs' CNI_ARGS start with IgnoreUnknown=1 and carry the sandbox ID too.
TEST_F(PluginTest, DelAsContainerdSendsItOnRemovePodSandboxSucceedsAfterTheFirstDel) {
  Pod pod = NewPod("10.77.0.25");
  AddGid("mlx5_1", pod.ip);
  cni_args_ = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=poda;"
              "K8S_POD_INFRA_CONTAINER_ID=6c3ec455490c6cad;K8S_POD_UID=11111111-aaaa-4aaa-8aaa-000000000001";
  Kubelet().RecordAllocation({"default", "poda", "11111111-aaaa-4aaa-8aaa-000000000001"}, "main",
                             "rdma/roce", {"0000:5e:00.2"});
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "6c3ec455490c6cad", &pod, conf).exit_code, 0);
  auto first = Run("DEL", "6c3ec455490c6cad", &pod, conf);
  EXPECT_EQ(first.exit_code, 0) << first.stdout_data;
  pod.ns = Netns();  // containerd removed the sandbox's netns
  empty_netns_ = true;
  json bare = Conf("1.0.0", nullptr, {{"deviceID", "mlx5_1"}});
  auto second = Run("DEL", "6c3ec455490c6cad", nullptr, bare);
  EXPECT_EQ(second.exit_code, 0) << second.stdout_data;
  EXPECT_EQ(Records(), 0u);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
}

TEST_F(PluginTest, DelWhenDeviceAlreadyHomeSucceeds) {
  Pod pod = NewPod("10.77.0.24");
  AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  ASSERT_TRUE(MoveHomeFromThePod(pod, "mlx5_1").ok());
  EXPECT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, CheckDetectsDeviceGoneHomeAndQosSettingDrift) {
  Pod pod = NewPod("10.77.0.25");
  AddGid("mlx5_1", pod.ip);
  json e = kQos;
  e["deviceID"] = "mlx5_1";
  json conf = Conf("1.0.0", &pod, e);
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(Run("CHECK", "c1", &pod, conf).exit_code, 0);
  dcb_.Find("ens1f0np0")->pfc.enabled = 0;
  auto out = Run("CHECK", "c1", &pod, conf);
  EXPECT_EQ(Code(out), kErrQos);
  EXPECT_NE(Msg(out).find("pfc:ens1f0np0:3"), std::string::npos) << Msg(out);
  dcb_.Find("ens1f0np0")->pfc.enabled = 1 << 3;
  SetDevAttr("mlx5_1", "tc/1/traffic_class", "0");
  EXPECT_EQ(Code(Run("CHECK", "c1", &pod, conf)), kErrQos);
  SetDevAttr("mlx5_1", "tc/1/traffic_class", "106");
  EXPECT_EQ(Run("CHECK", "c1", &pod, conf).exit_code, 0);
  ASSERT_TRUE(MoveHomeFromThePod(pod, "mlx5_1").ok());
  out = Run("CHECK", "c1", &pod, conf);
  EXPECT_EQ(Code(out), kErrWiring);
  EXPECT_NE(Msg(out).find("mlx5_1"), std::string::npos);
}

TEST_F(PluginTest, CheckDetectsAMissingGid) {
  Pod pod = NewPod("10.77.0.26");
  const int index = AddGid("mlx5_1", pod.ip);
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  ASSERT_TRUE(sysfs_world_->RemoveRdmaAttr("mlx5_1", "ports/1/gids/" + std::to_string(index)).ok());
  EXPECT_EQ(Code(Run("CHECK", "c1", &pod, conf)), kErrGidMissing);
}

TEST_F(PluginTest, GcReleasesAttachmentsNotInValidAttachments) {
  Pod a = NewPod("10.77.0.27");
  Pod b = NewPod("10.77.0.28");
  AddGid("mlx5_1", a.ip);
  AddGid("mlx5_2", b.ip);
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.1.0", &a, {{"deviceID", "mlx5_1"}, {"qos", {{"pfc", {2}}}}})).exit_code, 0);
  ASSERT_EQ(Run("ADD", "cb", &b, Conf("1.1.0", &b, {{"deviceID", "mlx5_2"}})).exit_code, 0);
  json gc = Conf("1.1.0", nullptr);
  gc["cni.dev/valid-attachments"] = {{{"containerID", "cb"}, {"ifname", "net1"}}};
  auto out = Run("GC", "", nullptr, gc);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(node_key_, "mlx5_1")) << "stale attachment's device returned home";
  EXPECT_TRUE(In(b.key, "mlx5_2")) << "valid attachment untouched";
  EXPECT_EQ(Pfc(), 0);
  EXPECT_EQ(Records(), 1u);
  gc["cni.dev/valid-attachments"] = json::array();
  ASSERT_EQ(Run("GC", "", nullptr, gc).exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_2"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginTest, StatusIsOkWithRdmaAnd50Otherwise) {
  json conf = Conf("1.1.0", nullptr);
  EXPECT_EQ(Run("STATUS", "", nullptr, conf).exit_code, 0);
  conf["netnsMode"] = "shared";
  auto out = Run("STATUS", "", nullptr, conf);
  EXPECT_EQ(Code(out), kErrPluginNotAvailable) << "kernel is exclusive";
  EXPECT_NE(Msg(out).find("exclusive"), std::string::npos);
  conf.erase("netnsMode");
  conf["deviceID"] = "mlx5_9";
  EXPECT_EQ(Code(Run("STATUS", "", nullptr, conf)), kErrPluginNotAvailable);
  conf.erase("deviceID");
  world_->fail_get_mode = UnavailableError("netlink: Protocol not supported");
  EXPECT_EQ(Code(Run("STATUS", "", nullptr, conf)), kErrPluginNotAvailable);
  UseFixture("no_rdma");
  out = Run("STATUS", "", nullptr, conf);
  EXPECT_EQ(Code(out), kErrPluginNotAvailable);
  EXPECT_NE(Msg(out).find("class/infiniband"), std::string::npos);
}

TEST_F(PluginTest, IbPortNotYetActiveIsTryAgainLater) {
  UseFixture("mlx5_ib_2port");
  world_->mode = RdmaNetnsMode::kShared;
  Pod pod = NewPod("10.77.0.29");
  SetDevAttr("mlx5_0", "ports/1/state", "2: INIT");
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_0"}, {"port", 1}});
  EXPECT_EQ(Code(Run("ADD", "c1", &pod, conf)), kErrTryAgainLater);
  SetDevAttr("mlx5_0", "ports/1/state", "4: ACTIVE");
  auto out = Run("ADD", "c1", &pod, conf);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(Run("CHECK", "c1", &pod, conf).exit_code, 0);
  SetDevAttr("mlx5_0", "ports/1/state", "3: ARMED");
  EXPECT_EQ(Code(Run("CHECK", "c1", &pod, conf)), kErrTryAgainLater) << "CHECK sees the port leave ACTIVE";
  EXPECT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(Code(Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_0"}, {"port", 2}}))),
            kErrWiring) << "port 2 is DOWN";
}

TEST_F(PluginTest, IbPkeyMustBeInThePortsTable) {
  UseFixture("mlx5_ib_2port");
  world_->mode = RdmaNetnsMode::kShared;
  Pod pod = NewPod("10.77.0.30");
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_0"}, {"port", 1}, {"pkey", "0x7123"}}));
  EXPECT_EQ(Code(out), kErrInvalidConfig);
  EXPECT_NE(Msg(out).find("0x7123"), std::string::npos) << Msg(out);
  out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_0"}, {"port", 1}, {"pkey", "0x7fff"}}));
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data << " (0xffff is the full member of 0x7fff)";
}

TEST_F(PluginTest, IwarpGetsNoLosslessSettings) {
  UseFixture("irdma_iwarp");
  world_->mode = RdmaNetnsMode::kShared;
  FakeRdmaNetlink(world_, node_key_).AddDevice("irdma0");
  Pod pod = NewPod("10.77.0.31");
  json conf = Conf("1.0.0", &pod, {{"deviceID", "irdma0"}, {"qos", {{"pfc", {3}}, {"strict", true}}}});
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(StateStore(state_).Load("rdma", "c1", "net1")->qos_settings.empty());
  EXPECT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
}

TEST_F(PluginTest, ExclusiveAddRefusesADeviceHeldByAnotherPod) {
  Pod a = NewPod("10.77.0.32");
  Pod b = NewPod("10.77.0.33");
  AddGid("mlx5_1", a.ip);
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.0.0", &a, {{"deviceID", "mlx5_1"}})).exit_code, 0);
  auto out = Run("ADD", "cb", &b, Conf("1.0.0", &b, {{"deviceID", "mlx5_1"}}));
  EXPECT_EQ(Code(out), kErrWiring);
  EXPECT_NE(Msg(out).find("another pod"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(a.key, "mlx5_1"));
}

TEST_F(PluginTest, EnsureIpv6GidEnablesIpv6AndWaitsForTheLinkLocalGid) {
  Pod pod = NewPod("10.77.0.34");
  auto gid_writer = StartGidWriter("mlx5_1", &pod);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"ensureIPv6Gid", true}}));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  std::string v;
  ASSERT_TRUE(RunInNetns(pod.ns, [&]() -> Status {
    v = ReadFile("/proc/sys/net/ipv6/conf/net1/disable_ipv6");
    return Status::Ok();
  }).ok());
  EXPECT_EQ(v, "0");
}

TEST_F(PluginTest, SixteenConcurrentAddDelPairsLoseNothing) {
  world_->mode = RdmaNetnsMode::kShared;
  constexpr int kPairs = 16;
  GrowGidTable("mlx5_0", 256);  // a GID for each pod
  std::vector<Pod> pods;
  for (int i = 0; i < kPairs; ++i) {
    pods.push_back(NewPod("10.78.0." + std::to_string(i + 2)));
    AddGid("mlx5_0", pods.back().ip);
  }
  std::barrier sync(kPairs);
  std::atomic<int> add_ok{0}, del_ok{0}, records_seen{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kPairs; ++i) {
    threads.emplace_back([&, i] {
      json conf = Conf("1.1.0", &pods[i], {{"deviceID", "mlx5_0"},
                                           {"qos", {{"pfc", {3}}, {"dscpToPriority", {{"26", 3}}}}}});
      const std::string cid = "pod" + std::to_string(i);
      if (Run("ADD", cid, &pods[i], conf).exit_code == 0) ++add_ok;
      sync.arrive_and_wait();
      if (i == 0) records_seen = static_cast<int>(Records());
      sync.arrive_and_wait();
      if (Run("DEL", cid, &pods[i], conf).exit_code == 0) ++del_ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(add_ok, kPairs);
  EXPECT_EQ(records_seen, kPairs);
  EXPECT_EQ(del_ok, kPairs);
  EXPECT_EQ(Records(), 0u);
  EXPECT_EQ(Pfc(), 0);
  EXPECT_TRUE(dcb_.Find("ens1f0np0")->app.empty());
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, LogsGoToTheLogFileNotStdout) {
  Pod pod = NewPod("10.77.0.35");
  AddGid("mlx5_1", pod.ip);
  const std::string log = tmp_.path() + "/cni.log";
  options_.node.log_file = log;
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"logLevel", "debug"}}));
  ASSERT_EQ(out.exit_code, 0);
  EXPECT_TRUE(json::parse(out.stdout_data).is_object());
  EXPECT_NE(ReadFile(log).find("moved mlx5_1 into netns"), std::string::npos) << ReadFile(log);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

TEST_F(PluginTest, ANetconfThatSetsAHostPathIsRefusedNamingTheKey) {
  // A NAD is written by namespace users: none of these may choose where root writes.
  Pod pod = NewPod("10.77.0.60");
  AddGid("mlx5_1", pod.ip);
  const std::string victim = tmp_.path() + "/victim";
  ASSERT_TRUE(WriteFile(victim, "precious\n"));
  const std::map<std::string, std::string> keys = {{"logFile", victim},
                                                   {"stateDir", tmp_.path() + "/nad-state"},
                                                   {"sysfsRoot", tmp_.path() + "/nad-sys"},
                                                   {"configfsRoot", tmp_.path() + "/nad-config"}};
  for (const auto& [key, value] : keys) {
    for (std::string cmd : {"ADD", "CHECK", "STATUS", "GC"}) {
      SCOPED_TRACE(key + " " + cmd);
      json conf = Conf("1.1.0", &pod, {{"deviceID", "mlx5_1"}, {key, value}});
      conf["cni.dev/valid-attachments"] = json::array();
      auto out = Run(cmd, cmd == "ADD" || cmd == "CHECK" ? "c1" : "", cmd == "ADD" || cmd == "CHECK" ? &pod : nullptr, conf);
      EXPECT_EQ(Code(out), kErrInvalidConfig) << out.stdout_data;
      EXPECT_NE(Msg(out).find("\"" + key + "\""), std::string::npos) << Msg(out);
      EXPECT_NE(Msg(out).find("allowNetconfOverrides"), std::string::npos) << Msg(out);
    }
  }
  EXPECT_EQ(ReadFile(victim), "precious");
  EXPECT_FALSE(Exists(tmp_.path() + "/nad-state"));
  EXPECT_FALSE(Exists(state_)) << "refused before anything was touched";
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
}

TEST_F(PluginTest, TheNodeConfigurationCanAllowNetconfHostPaths) {
  options_.node.allow_netconf_overrides = true;
  Pod pod = NewPod("10.77.0.61");
  AddGid("mlx5_1", pod.ip);
  const std::string other = tmp_.path() + "/other-state", log = tmp_.path() + "/nad.log";
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"stateDir", other}, {"logFile", log}});
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(StateStore(other).List()->size(), 1u);
  EXPECT_FALSE(Exists(state_));
  EXPECT_NE(ReadFile(log).find("moved mlx5_1"), std::string::npos);
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_TRUE(StateStore(other).List()->empty());
}

TEST_F(PluginTest, DelWithAForbiddenHostPathCleansUpFromTheNodesStateAndWritesNothingThere) {
  Pod pod = NewPod("10.77.0.62");
  AddGid("mlx5_1", pod.ip);
  const std::string node_log = tmp_.path() + "/node.log";
  options_.node.log_file = node_log;
  ASSERT_EQ(Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}})).exit_code, 0);
  ASSERT_TRUE(In(pod.key, "mlx5_1"));
  const std::string nad_state = tmp_.path() + "/nad-state", nad_log = tmp_.path() + "/nad.log";
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"stateDir", nad_state}, {"logFile", nad_log},
                                   {"sysfsRoot", tmp_.path() + "/nad-sys"}});
  auto out = Run("DEL", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(node_key_, "mlx5_1")) << "DEL still undid the attachment";
  EXPECT_EQ(Records(), 0u);
  EXPECT_FALSE(Exists(nad_state));
  EXPECT_FALSE(Exists(nad_log));
  EXPECT_NE(ReadFile(node_log).find("sysfsRoot, stateDir, logFile"), std::string::npos) << ReadFile(node_log);
}

TEST_F(PluginTest, TheNodeConfigurationFileSetsThePathsAndAnInvalidOneIsRefused) {
  Pod pod = NewPod("10.77.0.63");
  AddGid("mlx5_1", pod.ip);
  const std::string file = tmp_.path() + "/node.json", log = tmp_.path() + "/from-file.log";
  const std::string state = tmp_.path() + "/file-state";
  options_.node_config_path = file;
  options_.node.state_dir = tmp_.path() + "/default-state";
  ASSERT_TRUE(WriteFile(file, json({{"stateDir", state}, {"logFile", log}, {"logLevel", "error"}}).dump()));
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(StateStore(state).List()->size(), 1u);
  EXPECT_FALSE(Exists(tmp_.path() + "/default-state"));
  EXPECT_TRUE(Exists(log));
  EXPECT_EQ(ReadFile(log).find("INFO"), std::string::npos) << "the node's logLevel";
  json verbose = conf;
  verbose["logLevel"] = "info";
  ASSERT_EQ(Run("DEL", "c1", &pod, verbose).exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_NE(ReadFile(log).find("INFO"), std::string::npos) << "a netconf logLevel overrides the node's";
  // A typo, a relative path, a file others can write: every command, VERSION too, says so.
  for (auto [content, mode, want] : std::vector<std::tuple<std::string, mode_t, std::string>>{
           {R"({"stateDirr":"/x"})", 0644, "$.stateDirr: unknown field"},
           {R"({"stateDir":"var/x"})", 0644, "absolute"},
           {R"({"allowNetconfOverrides":"yes"})", 0644, "allowNetconfOverrides"},
           {"{", 0644, "JSON"},
           {"{}", 0666, "others cannot write"}}) {
    SCOPED_TRACE(content);
    ASSERT_TRUE(WriteFile(file, content));
    ASSERT_EQ(chmod(file.c_str(), mode), 0);
    for (std::string cmd : {"ADD", "DEL", "VERSION"}) {
      auto out = Run(cmd, "c1", &pod, conf);
      EXPECT_EQ(Code(out), kErrInvalidConfig) << cmd << ": " << out.stdout_data;
      EXPECT_NE(Msg(out).find(file), std::string::npos) << Msg(out);
      EXPECT_NE(Msg(out).find(want), std::string::npos) << Msg(out);
    }
  }
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
}

TEST_F(PluginTest, AQosSettingAnAdminChangedSinceWeAppliedItIsNotClobberedOnRestore) {
  Pod pod = NewPod("10.77.0.64");
  AddGid("mlx5_1", pod.ip);
  const std::string log = tmp_.path() + "/cni.log";
  options_.node.log_file = log;
  // (not roceTos: the kernel resets it when the device moves home, see SetUp)
  // The device's traffic_class wherever it shows now (the pod's view while it is moved).
  const char* tc = "tc/1/traffic_class";
  json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"qos", {{"trafficClass", 106}, {"pfc", {3}}}}});
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  ASSERT_EQ(DevAttr("mlx5_1", tc), "106");
  ASSERT_EQ(Pfc(), 1 << 3);
  SetDevAttr("mlx5_1", tc, "64\n");  // the admin, while the pod runs
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(DevAttr("mlx5_1", tc), "64") << "the admin's value is kept";
  EXPECT_EQ(Pfc(), 0) << "an unchanged knob is restored as before";
  auto saved = StateStore(state_).LoadQosOriginals();
  ASSERT_TRUE(saved.ok());
  ASSERT_EQ(saved->count("tc:mlx5_1:1"), 1u) << "our original stays on record";
  EXPECT_EQ(saved->at("tc:mlx5_1:1").original, "0");
  EXPECT_EQ(saved->at("tc:mlx5_1:1").applied, "106");
  EXPECT_EQ(saved->at("tc:mlx5_1:1").left_as, "64");
  EXPECT_EQ(saved->count("pfc:ens1f0np0:3"), 0u);
  EXPECT_NE(ReadFile(log).find("tc:mlx5_1:1 is 64"), std::string::npos) << ReadFile(log);
  // Not retried by later DELs; the next attachment that changes it starts from the admin's value.
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(DevAttr("mlx5_1", tc), "64");
  ASSERT_EQ(Run("ADD", "c1", &pod, conf).exit_code, 0);
  ASSERT_EQ(DevAttr("mlx5_1", tc), "106");
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_EQ(DevAttr("mlx5_1", tc), "64") << "restored to the admin's value";
  EXPECT_TRUE(Originals().empty());
}

TEST_F(PluginTest, ACorruptRecordDoesNotBlockOtherAttachmentsAndIsQuarantined) {
  Pod a = NewPod("10.77.0.65");
  Pod b = NewPod("10.77.0.66");
  AddGid("mlx5_1", a.ip);
  AddGid("mlx5_2", b.ip);
  const std::string log = tmp_.path() + "/cni.log";
  options_.node.log_file = log;
  json ea = {{"deviceID", "mlx5_1"}, {"qos", {{"pfc", {3}}}}};
  json eb = {{"deviceID", "mlx5_2"}, {"qos", {{"pfc", {3}}}}};
  ASSERT_EQ(Run("ADD", "ca", &a, Conf("1.1.0", &a, ea)).exit_code, 0);
  ASSERT_TRUE(WriteFile(state_ + "/attachments/rdma/zz:net1.json", "{\"network\":"));
  auto out = Run("ADD", "cb", &b, Conf("1.1.0", &b, eb));  // lists every record (QoS conflicts)
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  out = Run("DEL", "ca", &a, Conf("1.1.0", &a, ea));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(Pfc(), 1 << 3) << "cb still needs it";
  json gc = Conf("1.1.0", nullptr);
  gc["cni.dev/valid-attachments"] = json::array();
  out = Run("GC", "", nullptr, gc);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(Records(), 0u);
  EXPECT_EQ(Pfc(), 0);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_TRUE(In(node_key_, "mlx5_2"));
  const std::string logged = ReadFile(log);
  size_t n = 0;
  std::istringstream lines(logged);
  for (std::string line; std::getline(lines, line);) n += line.find("zz:net1.json") != std::string::npos;
  EXPECT_EQ(n, 1u) << "one error line:\n" << logged;
  EXPECT_NE(logged.find("quarantined"), std::string::npos) << logged;
}

TEST_F(PluginTest, AnExplicitSysfsRootEqualToTheNodesKeepsThePodsView) {
  // "sysfsRoot": the node's own root (with or without a trailing slash) is no fixture tree: a
  // device moved into the pod is read in the pod's view, as without the key.
  options_.node.allow_netconf_overrides = true;  // what lets a netconf name sysfsRoot at all
  for (const std::string& root : {sysfs_, sysfs_ + "/"}) {
    SCOPED_TRACE(root);
    Pod pod = NewPod("10.77.0.39");
    AddGid("mlx5_1", pod.ip);
    json conf = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"sysfsRoot", root}});
    auto out = Run("ADD", "c1", &pod, conf);
    ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
    out = Run("ADD", "c1", &pod, conf);
    EXPECT_EQ(out.exit_code, 0) << "re-ADD: " << out.stdout_data;
    EXPECT_EQ(Run("CHECK", "c1", &pod, conf).exit_code, 0);
    ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
    EXPECT_TRUE(In(node_key_, "mlx5_1"));
  }
}

TEST_F(PluginTest, AddLogsTheRoceV2GidIndexOfThePodsAddress) {
  Pod pod = NewPod("10.77.0.40");
  const int index = AddGid("mlx5_1", pod.ip);
  const std::string log = tmp_.path() + "/stderr.log";
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  options_.stderr_fd = fd;
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}}));
  close(fd);
  options_.stderr_fd = 2;
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_NE(ReadFile(log).find("INFO rdmak8s[" + std::to_string(getpid()) + "] ADD rdma c1/net1: "
                               "RoCE v2 GID index " + std::to_string(index) +
                               " for 10.77.0.40 on mlx5_1 port 1"),
            std::string::npos)
      << ReadFile(log);
}

TEST_F(PluginTest, ADeviceQosSettingIsRestoredInThePodWhenAnotherAttachmentKeepsTheDeviceThere) {
  // Exclusive mode, two interfaces of one pod over one device; only net1 asked for a traffic
  // class. When net1 leaves, net2 keeps the device in the pod, where the node's sysfs no longer
  // shows it: the knob must be restored where the device shows (the pod's view), at once.
  Pod pod = NewPod("10.77.0.46");
  ASSERT_TRUE(ShIn(node_, "ip link add t4x type veth peer name ht4x").ok());
  ASSERT_TRUE(RunInNetns(node_, [&]() -> Status {
    RDMAK8S_ASSIGN_OR_RETURN(auto rt, NewRouteNetlink());
    return rt->MoveLinkToNetns("t4x", pod.ns.fd(), "net2");
  }).ok());
  ASSERT_TRUE(ShIn(pod.ns, "ip addr add 10.77.1.46/24 dev net2 && ip link set net2 up").ok());
  AddGid("mlx5_1", pod.ip);
  AddGid("mlx5_1", "10.77.1.46");
  const std::string log = tmp_.path() + "/cni.log";
  options_.node.log_file = log;
  json c1 = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}, {"qos", {{"trafficClass", 106}}}});
  json c2 = Conf("1.0.0", &pod, {{"deviceID", "mlx5_1"}}, "net2");
  c2["prevResult"]["ips"][0]["address"] = "10.77.1.46/24";
  ASSERT_EQ(Run("ADD", "c1", &pod, c1).exit_code, 0);
  ASSERT_EQ(Run("ADD", "c1", &pod, c2, "net2").exit_code, 0);
  ASSERT_EQ(DevAttr("mlx5_1", "tc/1/traffic_class"), "106");
  ASSERT_EQ(Run("DEL", "c1", &pod, c1).exit_code, 0);
  EXPECT_TRUE(In(pod.key, "mlx5_1")) << "net2 still uses it";
  EXPECT_EQ(DevAttr("mlx5_1", "tc/1/traffic_class"), "0") << "restored in the pod's view";
  EXPECT_TRUE(Originals().empty()) << "nothing left to retry";
  EXPECT_EQ(ReadFile(log).find("NOT restored"), std::string::npos) << ReadFile(log);
  ASSERT_EQ(Run("DEL", "c1", &pod, c2, "net2").exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(DevAttr("mlx5_1", "tc/1/traffic_class"), "0");
}

}  // namespace
}  // namespace rdmak8s::cni
