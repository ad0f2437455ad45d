// The plugin finding the RDMA device a DRA claim gave the pod (issue 12, item 5), in-process over
// the fixture of plugin_fixture.h (real network namespaces, a copy of a kernel-shaped sysfs
// tree, the fake RDMA netlink), with the pod's records written as the DRA driver writes them
// (WritePodClaimRecord) in the node's records dir.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <vector>

#include "plugin_fixture.h"
#include "rdmak8s/base/file_util.h"
#include "rdmak8s/device/roce_gid.h"
#include "rdmak8s/records/attachment_facts.h"
#include "rdmak8s/records/claim_gid_spec.h"
#include "rdmak8s/records/pod_devices.h"

namespace rdmak8s::cni {
namespace {

namespace fs = std::filesystem;

constexpr char kUid[] = "7c0ffee0-1111-4222-8333-444455556666";

class PluginDraTest : public PluginTest {
 protected:
  void SetUp() override {
    PluginTest::SetUp();
    pods_ = tmp_.path() + "/dra-pods";
    options_.node.pod_devices_dir = pods_;
    options_.node.cdi_dir = tmp_.path() + "/cdi";
    cni_args_ = std::string("IgnoreUnknown=1;K8S_POD_NAMESPACE=team;K8S_POD_NAME=trainer-0;K8S_POD_UID=") + kUid;
  }

  // The DRA driver's prepare of claim team/<claim> for the pod: one device per request.
  void Prepare(const std::string& claim, const std::vector<std::pair<std::string, std::string>>& devices,
               const std::string& pod_uid = kUid) {
    PodClaimRecord r{"team", claim, "uid-" + claim, {}};
    for (const auto& [request, dev] : devices) {
      r.devices.push_back({request, "rdma.rdmak8s.io", "node-a", "dev-" + dev, dev, ""});
    }
    Status s = WritePodClaimRecord(pods_, pod_uid, "rdma.rdmak8s.io", r);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void Unprepare(const std::string& claim) {
    Status s = RemovePodClaimRecord(pods_, kUid, "rdma.rdmak8s.io", "uid-" + claim);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::string pods_;
};

TEST_F(PluginDraTest, AddWithoutDeviceIdTakesThePodsDraDeviceAndDelTakesItHomeAfterUnprepare) {
  Pod pod = NewPod("10.78.0.2");  // a veth: CNI_IFNAME leads to no RDMA device
  AddGid("mlx5_1", pod.ip);
  Prepare("nic", {{"rdma", "mlx5_1"}});
  json conf = Conf("1.0.0", &pod);
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(pod.key, "mlx5_1"));
  EXPECT_FALSE(In(node_key_, "mlx5_1"));
  auto rec = StateStore(state_).Load("rdma", "c1", "net1");
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->rdma_dev, "mlx5_1");
  EXPECT_EQ(Run("CHECK", "c1", &pod, conf).exit_code, 0);
  // Kubelet unprepares the claim once the pod's containers are gone, and the runtime's DEL may
  // come after that: CHECK and DEL work from what ADD recorded, not from the claim.
  Unprepare("nic");
  out = Run("CHECK", "c1", &pod, conf);
  EXPECT_EQ(out.exit_code, 0) << out.stdout_data;
  out = Run("DEL", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

// Issue 34 item 1: what only the CNI learns reaches the driver's claim status through a file.
TEST_F(PluginDraTest, AddOfAClaimedDeviceLeavesItsFactsForTheDriverAndDelRemovesThem) {
  Pod pod = NewPod("10.78.0.9");
  AddGid("mlx5_1", pod.ip);
  PodClaimRecord r{"team", "nic", "uid-nic", {{"rdma", "rdma.rdmak8s.io", "node-a", "mlx5-1", "mlx5_1", ""}}};
  ASSERT_TRUE(WritePodClaimRecord(pods_, kUid, "rdma.rdmak8s.io", r).ok());
  json conf = Conf("1.0.0", &pod);
  auto out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  auto facts = ReadAttachmentFacts(pods_, "uid-nic", "rdma.rdmak8s.io");
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  ASSERT_EQ(facts->size(), 1u);
  const AttachmentFacts& f = (*facts)[0];
  EXPECT_EQ(f.device, "mlx5-1");
  EXPECT_EQ(f.rdma_dev, "mlx5_1");
  EXPECT_EQ(f.ifname, "net1");
  EXPECT_EQ(f.container_id, "c1");
  EXPECT_EQ(f.ips, std::vector<std::string>{"10.78.0.9/24"});
  EXPECT_EQ(f.hardware_address, "02:00:00:00:00:01");
  EXPECT_EQ(f.gid, GidForIp("10.78.0.9"));
  EXPECT_TRUE(f.gid_index.has_value());
  out = Run("DEL", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  facts = ReadAttachmentFacts(pods_, "uid-nic", "rdma.rdmak8s.io");
  ASSERT_TRUE(facts.ok());
  EXPECT_TRUE(facts->empty());
}

// Issue 34 item 2: the GID index the containers get, through the spec the driver made at prepare.
TEST_F(PluginDraTest, AddFillsInTheClaimsGidIndexSpecWithTheIndexOfThePodsAddress) {
  Pod pod = NewPod("10.78.0.9");
  AddGid("mlx5_1", pod.ip);
  PodClaimRecord r{"team", "nic", "uid-nic", {{"rdma", "rdma.rdmak8s.io", "node-a", "mlx5-1", "mlx5_1", ""}}};
  ASSERT_TRUE(WritePodClaimRecord(pods_, kUid, "rdma.rdmak8s.io", r).ok());
  fs::create_directories(options_.node.cdi_dir);
  ASSERT_TRUE(WriteClaimGidSpecIfAbsent(options_.node.cdi_dir, "rdma.rdmak8s.io", "uid-nic", "mlx5-1").ok());
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  auto facts = ReadAttachmentFacts(pods_, "uid-nic", "rdma.rdmak8s.io");
  ASSERT_TRUE(facts.ok() && facts->size() == 1u && (*facts)[0].gid_index) << facts.status().ToString();
  auto spec = ReadRegularFile(*ClaimGidSpecPath(options_.node.cdi_dir, "rdma.rdmak8s.io", "uid-nic", "mlx5-1"), 4096);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(*spec, BuildClaimGidSpec("rdma.rdmak8s.io", "uid-nic", "mlx5-1", *(*facts)[0].gid_index));
}

TEST_F(PluginDraTest, GcReleasesADraAttachmentWhoseClaimIsGone) {
  Pod pod = NewPod("10.78.0.3");
  AddGid("mlx5_1", pod.ip);
  Prepare("nic", {{"rdma", "mlx5_1"}});
  ASSERT_EQ(Run("ADD", "c1", &pod, Conf("1.1.0", &pod)).exit_code, 0);
  Unprepare("nic");
  json gc = Conf("1.1.0", nullptr, {{"cni.dev/valid-attachments", json::array()}});
  auto out = Run("GC", "", nullptr, gc);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginDraTest, SeveralDraDevicesNeedADraRequestAndTheOneNamedIsTaken) {
  Pod pod = NewPod("10.78.0.4");
  AddGid("mlx5_2", pod.ip);
  Prepare("nics", {{"east", "mlx5_1"}, {"west", "mlx5_2"}});
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("team/nics/east (mlx5_1)"), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("team/nics/west (mlx5_2)"), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("draRequest"), std::string::npos) << Msg(out);
  EXPECT_EQ(Records(), 0u);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_TRUE(In(node_key_, "mlx5_2"));

  json conf = Conf("1.0.0", &pod, {{"draRequest", "west"}});
  out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(pod.key, "mlx5_2"));
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_2"));
}

// One claim whose two requests two drivers serve (or two instances of ours under two
// --driver-name): each driver keeps its own record, so the CNI sees both devices and the
// request picks one; one driver's unprepare leaves the other's device findable.
TEST_F(PluginDraTest, AClaimServedByTwoDriversShowsBothDevicesAndTheRequestPicks) {
  Pod pod = NewPod("10.78.0.12");
  AddGid("mlx5_2", pod.ip);
  for (const auto& [driver, request, dev] : std::vector<std::array<std::string, 3>>{
           {"ib.rdmak8s.io", "ib", "mlx5_1"}, {"roce.rdmak8s.io", "roce", "mlx5_2"}}) {
    PodClaimRecord r{"team", "both", "uid-both", {{request, driver, "node-a", "dev-" + dev, dev, ""}}};
    ASSERT_TRUE(WritePodClaimRecord(pods_, kUid, driver, r).ok());
  }
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("team/both/ib (mlx5_1)"), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("team/both/roce (mlx5_2)"), std::string::npos) << Msg(out);

  json conf = Conf("1.0.0", &pod, {{"draRequest", "both/roce"}});
  out = Run("ADD", "c1", &pod, conf);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(pod.key, "mlx5_2"));
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  ASSERT_EQ(Run("DEL", "c1", &pod, conf).exit_code, 0);
  EXPECT_TRUE(In(node_key_, "mlx5_2"));

  // The ib driver's unprepare leaves the roce driver's record: the only device now.
  ASSERT_TRUE(RemovePodClaimRecord(pods_, kUid, "ib.rdmak8s.io", "uid-both").ok());
  out = Run("ADD", "c2", &pod, Conf("1.0.0", &pod));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(pod.key, "mlx5_2"));
}

// On a node with both (rdma/roce served by a device plugin next to the DRA driver): a deviceID
// kubelet gave the pod wins over its claims' device.
TEST_F(PluginDraTest, ADeviceIdKubeletGaveThePodWinsOverTheDraRecords) {
  Pod pod = NewPod("10.78.0.5");
  AddGid("mlx5_2", pod.ip);
  Prepare("nic", {{"rdma", "mlx5_1"}});
  Kubelet().RecordAllocation({"team", "trainer-0", kUid}, "main", "rdma/roce", {"0000:5e:00.3"});
  ASSERT_EQ(Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "mlx5_2"}})).exit_code, 0);
  EXPECT_TRUE(In(pod.key, "mlx5_2"));
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
}

TEST_F(PluginDraTest, ADeviceIdOfThePodsOwnClaimIsTakenWithoutAskingKubelet) {
  Pod pod = NewPod("10.78.0.13");
  AddGid("mlx5_2", pod.ip);
  Prepare("nics", {{"east", "mlx5_1"}, {"west", "mlx5_2"}});
  fake::FakePodResources& kubelet = Kubelet();
  // The claim's device by its bus address, as a deviceID may name it.
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{"deviceID", "0000:5e:00.3"}}));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(pod.key, "mlx5_2"));
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(kubelet.calls(), 0u);
}

// Issue 32 item 1: tenant-b's NAD names the device tenant-a's claim holds for tenant-a's pod.
TEST_F(PluginDraTest, ADeviceIdOfAnotherTenantsClaimIsRefusedBeforeAnythingMoves) {
  constexpr char kUidB[] = "bbbbbbbb-0000-4000-8000-00000000000b";
  PodClaimRecord theirs{"tenant-a", "nic", "uid-a-nic", {{"rdma", "rdma.rdmak8s.io", "node-a", "dev-mlx5_1", "mlx5_1", ""}}};
  ASSERT_TRUE(WritePodClaimRecord(pods_, kUid, "rdma.rdmak8s.io", theirs).ok());
  PodClaimRecord mine{"tenant-b", "nic", "uid-b-nic", {{"rdma", "rdma.rdmak8s.io", "node-a", "dev-mlx5_2", "mlx5_2", ""}}};
  ASSERT_TRUE(WritePodClaimRecord(pods_, kUidB, "rdma.rdmak8s.io", mine).ok());
  Kubelet();  // kubelet serves pod-resources on every node; it gave no device-plugin device here
  Pod b = NewPod("10.78.0.14");
  cni_args_ = std::string("IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-b;K8S_POD_NAME=web;K8S_POD_UID=") + kUidB;
  json conf = Conf("1.0.0", &b, {{"deviceID", "mlx5_1"}, {"qos", {{"roceTos", 106}}}});
  auto out = Run("ADD", "c-b", &b, conf);
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("deviceID \"mlx5_1\""), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("pod tenant-b/web (uid " + std::string(kUidB) + ")"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_FALSE(In(b.key, "mlx5_1"));
  EXPECT_EQ(ReadFile(configfs_ + "/rdma_cm/mlx5_1/ports/1/default_roce_tos"), "0");
  EXPECT_EQ(Records(), 0u);

  // A pod of tenant-b with no claim at all is refused the same way.
  cni_args_ = "K8S_POD_NAMESPACE=tenant-b;K8S_POD_NAME=other;K8S_POD_UID=cccccccc-0000-4000-8000-00000000000c";
  out = Run("ADD", "c-c", &b, conf);
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("pod tenant-b/other"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));

  // tenant-a's own ADD, by its pod's records, still gets its device.
  Pod a = NewPod("10.78.0.15");
  AddGid("mlx5_1", a.ip);
  cni_args_ = std::string("K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=trainer-0;K8S_POD_UID=") + kUid;
  out = Run("ADD", "c-a", &a, Conf("1.0.0", &a, {{"deviceID", "mlx5_1"}}));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(a.key, "mlx5_1"));
}

TEST_F(PluginDraTest, NoDeviceIdAndNoClaimIsCode100NamingThePod) {
  Pod pod = NewPod("10.78.0.6");
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find(kUid), std::string::npos) << Msg(out);
  EXPECT_NE(Msg(out).find("no deviceID, and no DRA claim"), std::string::npos) << Msg(out);
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginDraTest, ADraRequestWithoutARecordOrAPodUidIsCode100) {
  Pod pod = NewPod("10.78.0.7");
  json conf = Conf("1.0.0", &pod, {{"draRequest", "rdma"}});
  auto out = Run("ADD", "c1", &pod, conf);
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("\"rdma\""), std::string::npos) << Msg(out);
  cni_args_.clear();
  out = Run("ADD", "c1", &pod, conf);
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find("K8S_POD_UID"), std::string::npos) << Msg(out);
}

TEST_F(PluginDraTest, WithoutAPodUidTheInterfaceStillLeadsToTheDevice) {
  Prepare("nic", {{"rdma", "mlx5_1"}});
  cni_args_ = "K8S_POD_NAMESPACE=team;K8S_POD_NAME=trainer-0";
  world_->mode = RdmaNetnsMode::kShared;
  ASSERT_TRUE(ShIn(node_, "ip link add ens1f0np0 type veth peer name ensx && ip link set ens1f0np0 up && ip link set ensx up").ok());
  Pod pod = NewPod("10.78.0.8", "ens1f0np0");  // macvlan over mlx5_0's PF netdev
  auto gid_writer = StartGidWriter("mlx5_0", &pod);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_EQ(StateStore(state_).Load("rdma", "c1", "net1")->rdma_dev, "mlx5_0");
}

TEST_F(PluginDraTest, APodUidThatIsNotAPlainNameIsRefused) {
  Pod pod = NewPod("10.78.0.9");
  // A record planted where "../x" would lead from the records dir.
  Prepare("nic", {{"rdma", "mlx5_1"}}, "x");
  ASSERT_EQ(rename((pods_ + "/x").c_str(), (tmp_.path() + "/x").c_str()), 0);
  for (std::string uid : {"../x", "a/b", "..", "x y"}) {
    SCOPED_TRACE(uid);
    cni_args_ = "K8S_POD_UID=" + uid;
    auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
    EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
    EXPECT_NE(Msg(out).find("\"" + uid + "\""), std::string::npos) << Msg(out);
    EXPECT_NE(Msg(out).find("not a plain name"), std::string::npos) << Msg(out);
    EXPECT_TRUE(In(node_key_, "mlx5_1"));
  }
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginDraTest, ASymlinkedPodDirectoryIsRefusedNamingIt) {
  Pod pod = NewPod("10.78.0.10");
  Prepare("nic", {{"rdma", "mlx5_1"}}, "planted");
  fs::create_directory_symlink(pods_ + "/planted", pods_ + "/" + kUid);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find(pods_ + "/" + kUid + " is a symlink"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginDraTest, ARecordOwnedByAnotherUserIsRefusedNamingIt) {
  Pod pod = NewPod("10.78.0.11");
  Prepare("nic", {{"rdma", "mlx5_1"}});
  const std::string record = pods_ + "/" + kUid + "/uid-nic.rdma.rdmak8s.io.json";
  ASSERT_EQ(chown(record.c_str(), 4242, 4242), 0);
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_EQ(Code(out), kErrDeviceNotFound) << out.stdout_data;
  EXPECT_NE(Msg(out).find(record + " is owned by uid 4242"), std::string::npos) << Msg(out);
  EXPECT_TRUE(In(node_key_, "mlx5_1"));
  // A records dir others can write is no more the driver's than a foreign file.
  ASSERT_EQ(chown(record.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(pods_.c_str(), 0777), 0);
  out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_NE(Msg(out).find(pods_ + " is writable by group or others"), std::string::npos) << Msg(out);
  EXPECT_EQ(Records(), 0u);
}

TEST_F(PluginDraTest, TheRecordsDirIsTheNodesNeverTheNetconfs) {
  Pod pod = NewPod("10.78.0.12");
  AddGid("mlx5_1", pod.ip);
  // Records a tenant would like the plugin to read, where the netconf points.
  const std::string elsewhere = tmp_.path() + "/tenant-pods";
  ASSERT_TRUE(WritePodClaimRecord(elsewhere, kUid, "rdma.rdmak8s.io", {"team", "nic", "uid-nic",
                                  {{"rdma", "d", "p", "dev", "mlx5_1", ""}}}).ok());
  options_.node.allow_netconf_overrides = true;  // not even then
  for (const char* key : {"podDevicesDir", "draRecordsDir"}) {
    auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod, {{key, elsewhere}}));
    EXPECT_EQ(Code(out), kErrDeviceNotFound) << key << ": " << out.stdout_data;
    EXPECT_TRUE(In(node_key_, "mlx5_1"));
  }
  // The node configuration file moves it.
  const std::string file = tmp_.path() + "/node.json";
  ASSERT_TRUE(WriteFile(file, json({{"podDevicesDir", elsewhere}}).dump()));
  options_.node_config_path = file;
  auto out = Run("ADD", "c1", &pod, Conf("1.0.0", &pod));
  ASSERT_EQ(out.exit_code, 0) << out.stdout_data;
  EXPECT_TRUE(In(pod.key, "mlx5_1"));
  ASSERT_TRUE(WriteFile(file, json({{"podDevicesDir", "run/x"}}).dump()));
  out = Run("DEL", "c1", &pod, Conf("1.0.0", &pod));
  EXPECT_EQ(Code(out), kErrInvalidConfig) << out.stdout_data;
  EXPECT_NE(Msg(out).find("$.podDevicesDir"), std::string::npos) << Msg(out);
}

}  // namespace
}  // namespace rdmak8s::cni
