// The fixture of the in-process CNI tests (plugin_test.cc, plugin_dra_test.cc): real network
// namespaces (a "node" netns the plugin runs in, one per pod), veth and macvlan pod interfaces, a
// copy of a kernel-shaped sysfs fixture tree, and FakeRdmaNetlink / FakeDcbNetlink for what this
// machine's kernel lacks.
#pragma once

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "cni/plugin.h"
#include "cni/spec.h"
#include "cni/state.h"
#include "cni_test_util.h"
#include "fakes/fake_dcb_netlink.h"
#include "fakes/fake_rdma_netlink.h"
#include "rdmak8s/device/device_lookup.h"
#include "rdmak8s/device/roce_gid.h"
#include "support/fake_pod_resources.h"
#include "support/sysfs_builder.h"
#include "support/throwaway_netns.h"

namespace rdmak8s::cni {

using nlohmann::json;
using rdmak8s::testing::NetnsSysfs;
using rdmak8s::testing::NewThrowawayNetns;
using rdmak8s::testing::ShIn;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// The CNI's view of a pod's sysfs over the NetnsSysfs world: the tree of the pod's netns.
class TaggedSysfsView : public SysfsView {
 public:
  explicit TaggedSysfsView(std::unique_ptr<NetnsSysfs>* world) : world_(world) {}
  StatusOr<std::unique_ptr<SysfsRoot>> Open(const Netns& ns) override {
    ++opens;
    RDMAK8S_ASSIGN_OR_RETURN(std::string root, (*world_)->RootOf(FakeRdmaNetlink::NetnsKey(ns.fd())));
    return std::make_unique<SysfsRoot>(root);
  }
  std::atomic<int> opens{0};  // how often the plugin asked for (mounted) a pod's view

 private:
  std::unique_ptr<NetnsSysfs>* world_;
};

struct Pod {
  Netns ns;
  std::string key;  // FakeRdmaNetlink netns key
  std::string ip;
};

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto node = NewThrowawayNetns();
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(*node);
    node_key_ = FakeRdmaNetlink::NetnsKey(node_.fd());
    ASSERT_TRUE(ShIn(node_, "ip link set lo up").ok());
    sysfs_ = tmp_.path() + "/sys";
    configfs_ = tmp_.path() + "/config";
    state_ = tmp_.path() + "/state";
    world_ = std::make_shared<FakeRdmaNetlink::World>();
    UseFixture("mlx5_roce_sriov");
    FakeRdmaNetlink host(world_, node_key_);
    for (auto d : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) host.AddDevice(d);
    // The kernel re-registers a device that changes netns: rdma_cm drops its per-device state
    // (cma_remove_one) and makes a fresh one (cma_add_one), so default_roce_tos reads 0 again.
    // And the device's sysfs entries follow it to its new netns's view.
    world_->on_move = [this](const std::string& dev, const std::string& key) {
      Status moved = sysfs_world_->MoveRdmaDevice(dev, key);
      EXPECT_TRUE(moved.ok()) << moved.ToString();
      const std::string tos = configfs_ + "/rdma_cm/" + dev + "/ports/1/default_roce_tos";
      struct stat st {};
      if (stat(tos.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {  // (a test may have broken it)
        EXPECT_TRUE(WriteFile(tos, "0\n"));
      }
    };
    dcb_.AddNetdev("ens1f0np0");
    options_.node_config_path = "";  // the node's configuration is options_.node as is
    options_.node.sysfs_root = sysfs_;
    options_.node.configfs_root = configfs_;
    options_.node.state_dir = state_;
    // kubelet's pod-resources API: nothing serves it until a test asks for Kubelet().
    options_.node.pod_resources_socket = tmp_.path() + "/pod-resources.sock";
    options_.gid_poll_interval_ms = 5;
    options_.pod_sysfs = &pod_view_;
    options_.new_rdma_netlink = [w = world_]() -> StatusOr<std::unique_ptr<RdmaNetlink>> {
      auto cur = CurrentNetns();
      if (!cur.ok()) return cur.status();
      return std::unique_ptr<RdmaNetlink>(new FakeRdmaNetlink(w, FakeRdmaNetlink::NetnsKey(cur->fd())));
    };
    options_.new_dcb_netlink = [this]() -> StatusOr<std::unique_ptr<DcbNetlink>> {
      return std::unique_ptr<DcbNetlink>(new SharedDcb(&dcb_));
    };
    options_.new_route_netlink = [] { return NewRouteNetlink(); };
  }

  // `rdma dev set <dev> netns <node>` run inside the pod (as `ip netns exec` would).
  Status MoveHomeFromThePod(const Pod& pod, const std::string& dev) {
    return RunInNetns(pod.ns, [&]() -> Status {
      FakeRdmaNetlink podview(world_, pod.key);
      return podview.MoveToNetns(dev, node_.fd());
    });
  }

  void UseFixture(const std::string& name) {
    for (const std::string& d : {sysfs_, configfs_, tmp_.path() + "/views"}) std::filesystem::remove_all(d);
    ASSERT_TRUE(testing::CopyFixture(name, sysfs_));
    sysfs_world_ = std::make_unique<NetnsSysfs>(node_key_, sysfs_, tmp_.path() + "/views");
    sysfs_world_->SetSharedMode([w = world_] { return w->mode == RdmaNetnsMode::kShared; });
    std::filesystem::create_directories(configfs_ + "/rdma_cm");
    if (name == "mlx5_roce_sriov") {
      for (int p = 0; p < 8; ++p) {
        for (auto side : {"rp", "np"}) {
          ASSERT_TRUE(WriteFile(sysfs_ + "/class/net/ens1f0np0/ecn/roce_" + side + "/enable/" +
                                std::to_string(p), "0\n"));
        }
      }
      for (auto d : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) {
        ASSERT_TRUE(WriteFile(configfs_ + "/rdma_cm/" + d + "/ports/1/default_roce_tos", "0\n"));
        ASSERT_TRUE(WriteFile(sysfs_ + "/class/infiniband/" + d + "/tc/1/traffic_class", "0\n"));
      }
    }
  }

  // A pod netns with `ifname` (a veth end, or a macvlan of node netdev `lower`) holding `ip`/24.
  Pod NewPod(const std::string& ip, const std::string& lower = "", const std::string& ifname = "net1") {
    Pod p;
    auto ns = NewThrowawayNetns();
    EXPECT_TRUE(ns.ok());
    p.ns = std::move(*ns);
    p.key = FakeRdmaNetlink::NetnsKey(p.ns.fd());
    p.ip = ip;
    const std::string tmpname = "t" + std::to_string(counter_++);
    std::string cmd = lower.empty()
                          ? "ip link add " + tmpname + " type veth peer name h" + tmpname
                          : "ip link add " + tmpname + " link " + lower + " type macvlan mode bridge";
    EXPECT_TRUE(ShIn(node_, cmd).ok()) << cmd;
    Status s = RunInNetns(node_, [&]() -> Status {
      RDMAK8S_ASSIGN_OR_RETURN(auto rt, NewRouteNetlink());
      return rt->MoveLinkToNetns(tmpname, p.ns.fd(), ifname);
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(ShIn(p.ns, "sysctl -w net.ipv6.conf." + ifname + ".disable_ipv6=1 && ip addr add " + ip +
                               "/24 dev " + ifname + " && ip link set " + ifname + " up").ok());
    return p;
  }

  // Writes an attribute of RDMA device `dev` wherever the device shows (its netns's view).
  void SetDevAttr(const std::string& dev, const std::string& rel, const std::string& text) {
    Status s = sysfs_world_->WriteRdmaAttr(dev, rel, text);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Reads an attribute of RDMA device `dev` where it shows now.
  std::string DevAttr(const std::string& dev, const std::string& rel) {
    auto root = sysfs_world_->RootOf(sysfs_world_->NetnsOf(dev));
    return root.ok() ? ReadFile(*root + "/class/infiniband/" + dev + "/" + rel) : "";
  }
  // Makes port 1's GID table `len` entries long (the fixtures' are 16; a ConnectX port's holds
  // 256), the new entries free, as the kernel shows a table's unused slots.
  void GrowGidTable(const std::string& dev, int len) {
    for (int i = 0; i < len; ++i) {
      const std::string rel = "ports/1/gids/" + std::to_string(i);
      if (DevAttr(dev, rel).empty()) SetDevAttr(dev, rel, rdmak8s::testing::kZeroGid);
    }
  }
  // What the kernel does for a RoCE device: a RoCE v2 GID per IP of the netdev, in the table's
  // first free slot (ib_cache's add takes the first empty entry, so a new GID never lands past a
  // hole). Returns that slot's index: the GID index a pod would use.
  int AddGid(const std::string& dev, const std::string& ip) {
    std::lock_guard<std::mutex> lock(gid_table_mu_);  // the kernel's GID table lock
    int index = 0;
    while (true) {
      const std::string gid = DevAttr(dev, "ports/1/gids/" + std::to_string(index));
      if (gid.empty()) {
        ADD_FAILURE() << "no free GID slot on " << dev;
        return -1;
      }
      if (gid.rfind(rdmak8s::testing::kZeroGid, 0) == 0) break;
      ++index;
    }
    SetDevAttr(dev, "ports/1/gid_attrs/types/" + std::to_string(index), "RoCE v2");
    SetDevAttr(dev, "ports/1/gids/" + std::to_string(index), GidForIp(ip));
    return index;
  }
  // Writes GIDs for every address the pod interface has, as they appear, until the writer
  // returned goes out of scope. Declared after the Pod it reads, it stops before the Pod is gone.
  class [[nodiscard]] GidWriter {
   public:
    explicit GidWriter(std::function<void(const std::atomic<bool>& stop)> body)
        : thread_([this, body = std::move(body)] { body(stop_); }) {}
    ~GidWriter() {
      stop_ = true;
      thread_.join();
    }
    GidWriter(const GidWriter&) = delete;
    GidWriter& operator=(const GidWriter&) = delete;

   private:
    std::atomic<bool> stop_{false};  // before thread_: set up before the thread reads it
    std::thread thread_;
  };
  GidWriter StartGidWriter(const std::string& dev, Pod* pod, const std::string& ifname = "net1") {
    return GidWriter([this, dev, pod, ifname](const std::atomic<bool>& stop) {
      std::set<std::string> done;
      while (!stop) {
        (void)RunInNetns(pod->ns, [&]() -> Status {
          RDMAK8S_ASSIGN_OR_RETURN(auto rt, NewRouteNetlink());
          RDMAK8S_ASSIGN_OR_RETURN(auto link, rt->GetLinkByName(ifname));
          RDMAK8S_ASSIGN_OR_RETURN(auto addrs, rt->ListAddresses(link.ifindex));
          for (const auto& a : addrs) {
            if (done.insert(a.address).second) AddGid(dev, a.address);
          }
          return Status::Ok();
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }

  json Conf(const std::string& version, const Pod* pod, json extra = json::object(),
            const std::string& ifname = "net1") {
    json c = {{"cniVersion", version}, {"name", "rdma"}, {"type", "rdmak8s"}, {"gidTimeoutMs", 2000}};
    if (pod != nullptr) {
      json prev = {{"cniVersion", version},
                   {"interfaces", {{{"name", ifname}, {"mac", "02:00:00:00:00:01"}, {"sandbox", pod->ns.path()}}}},
                   {"ips", {{{"address", pod->ip + "/24"}, {"interface", 0}}}}};
      if (CompareVersions(version, "1.0.0") < 0) prev["ips"][0]["version"] = "4";
      c["prevResult"] = prev;
    }
    for (auto& [k, v] : extra.items()) c[k] = v;
    return c;
  }

  PluginOutput Run(const std::string& cmd, const std::string& cid, const Pod* pod, const json& conf,
                   const std::string& ifname = "net1") {
    std::map<std::string, std::string> env = {{"CNI_COMMAND", cmd}, {"CNI_PATH", "/opt/cni/bin"}};
    if (!cid.empty()) env["CNI_CONTAINERID"] = cid;
    if (!ifname.empty() && cmd != "GC" && cmd != "STATUS") env["CNI_IFNAME"] = ifname;
    if (pod != nullptr) env["CNI_NETNS"] = pod->ns.path();
    else if (empty_netns_) env["CNI_NETNS"] = "";  // set but empty, as containerd sends it
    if (!cni_args_.empty()) env["CNI_ARGS"] = cni_args_;
    PluginOutput out;
    Status s = RunInNetns(node_, [&]() -> Status {
      out = RunPlugin(options_, [&](const char* k) -> const char* {
        auto it = env.find(k);
        return it == env.end() ? nullptr : it->second.c_str();
      }, conf.dump());
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok());
    return out;
  }

  // kubelet's pod-resources API on the node's podResourcesSocket, started on first use: what the
  // plugin asks which devices a pod was given for a netconf deviceID.
  fake::FakePodResources& Kubelet() {
    if (!kubelet_) {
      kubelet_ = std::make_unique<fake::FakePodResources>(options_.node.pod_resources_socket);
      Status s = kubelet_->Start();
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    return *kubelet_;
  }

  static int Code(const PluginOutput& out) {
    json j = json::parse(out.stdout_data, nullptr, false);
    return j.is_object() && j.contains("code") ? j["code"].get<int>() : 0;
  }
  static std::string Msg(const PluginOutput& out) {
    json j = json::parse(out.stdout_data, nullptr, false);
    return j.is_object() && j.contains("msg") ? j["msg"].get<std::string>() : "";
  }
  std::vector<std::string> DevicesIn(const std::string& key) {
    return FakeRdmaNetlink(world_, key).DeviceNamesIn(key);
  }
  bool In(const std::string& key, const std::string& dev) {
    auto v = DevicesIn(key);
    return std::find(v.begin(), v.end(), dev) != v.end();
  }
  size_t Records() {
    StateStore s(state_);
    auto l = s.List();
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? l->size() : 999;
  }
  std::map<std::string, std::string> Originals() {
    std::map<std::string, std::string> out;
    auto saved = StateStore(state_).LoadQosOriginals();
    EXPECT_TRUE(saved.ok()) << saved.status().ToString();
    if (saved.ok()) {
      for (const auto& [id, k] : *saved) out[id] = k.original;
    }
    return out;
  }
  uint8_t Pfc() { return dcb_.Find("ens1f0np0")->pfc.enabled; }

  TempDir tmp_;
  Netns node_;
  std::string node_key_, sysfs_, configfs_, state_;
  std::shared_ptr<FakeRdmaNetlink::World> world_;
  std::unique_ptr<NetnsSysfs> sysfs_world_;
  TaggedSysfsView pod_view_{&sysfs_world_};
  FakeDcbNetlink dcb_;
  PluginOptions options_;
  int counter_ = 0;
  std::string cni_args_;  // CNI_ARGS of every Run; empty: unset
  bool empty_netns_ = false;  // a Run without a pod sets CNI_NETNS="" instead of leaving it unset
  std::mutex gid_table_mu_;
  std::unique_ptr<fake::FakePodResources> kubelet_;
};

}  // namespace rdmak8s::cni
