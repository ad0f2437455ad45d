// cni_exec_plugin: the rdmak8s CNI binary as cni_exec_bench runs it: cni/main.cc's wiring, with
// the two seams this RDMA-less machine cannot serve replaced by stand-ins that keep their cost
// shape. argv[1] is the bench's world directory:
//   node/           the node's sysfs (an rxe-shaped tree, node.json's sysfsRoot)
//   pod/            the pod's view of it; class/infiniband/<dev> sits in the tree of the netns
//                   the device is in (class/infiniband is netns tagged)
//   rdma_netns      the netns key ("<st_dev>:<st_ino>") the device is in
// RDMA netlink: exclusive mode, one device, moved by renaming its class link between the trees.
// The pod's sysfs view: the real MountingSysfsView mount (unshare, mount, detach: the cost of
// the product's), whose root then reads the pod tree. rtnetlink is the real one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cni/plugin.h"
#include "fakes/fake_rdma_netlink.h"
#include "support/cni_stand_in_plugin.h"

namespace {

using namespace rdmak8s;

// Netns keys as the fake RDMA netlink's: "<st_dev>:<st_ino>".
constexpr auto NetnsKeyOf = &FakeRdmaNetlink::NetnsKey;
constexpr auto ThreadNetnsKey = &FakeRdmaNetlink::CallerNetnsKey;

class FileRdmaNetlink : public RdmaNetlink {
 public:
  FileRdmaNetlink(std::string world, std::string node_key)
      : world_(std::move(world)), node_key_(std::move(node_key)), self_(ThreadNetnsKey()) {}

  StatusOr<std::vector<RdmaLinkInfo>> ListDevices() override {
    std::vector<RdmaLinkInfo> out;
    if (Where() == self_) out.push_back(RdmaLinkInfo{.index = 1, .name = "rxe0", .num_ports = 1, .node_guid = ""});
    return out;
  }
  StatusOr<RdmaNetnsMode> GetNetnsMode() override { return RdmaNetnsMode::kExclusive; }
  Status SetNetnsMode(RdmaNetnsMode) override { return UnimplementedError("bench: no mode change"); }
  Status MoveToNetns(std::string_view dev, int netns_fd) override {
    if (dev != "rxe0" || Where() != self_) return NotFoundError("move RDMA device: No such device");
    const std::string to = NetnsKeyOf(netns_fd);
    const std::string from_root = world_ + (self_ == node_key_ ? "/node" : "/pod");
    const std::string to_root = world_ + (to == node_key_ ? "/node" : "/pod");
    if (from_root != to_root &&
        rename((from_root + "/class/infiniband/rxe0").c_str(), (to_root + "/class/infiniband/rxe0").c_str()) != 0) {
      return ErrnoError(errno, "bench: move class link of rxe0");
    }
    std::ofstream(world_ + "/rdma_netns") << to << "\n";
    return Status::Ok();
  }
  Status Rename(std::string_view, std::string_view) override { return UnimplementedError("bench: no rename"); }

 private:
  std::string Where() const {
    std::ifstream f(world_ + "/rdma_netns");
    std::string k;
    f >> k;
    return k;
  }
  std::string world_, node_key_, self_;
};

// The product's mount, then the pod tree: the handle keeps the detached mount alive as
// MountingSysfsView's does.
class BenchPodView : public cni::SysfsView {
 public:
  BenchPodView(std::string root, bool new_mount_api) : real_(new_mount_api), root_(std::move(root)) {}
  StatusOr<std::unique_ptr<cni::SysfsRoot>> Open(const Netns& ns) override {
    auto mounted = real_.Open(ns);
    if (!mounted.ok()) return mounted.status();
    held_.push_back(std::move(*mounted));
    return std::make_unique<cni::SysfsRoot>(root_);
  }

 private:
  cni::MountingSysfsView real_;
  std::string root_;
  std::vector<std::unique_ptr<cni::SysfsRoot>> held_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s WORLD_DIR [mount2] (stdin and CNI_* as a runtime passes them)\n", argv[0]);
    return 2;
  }
  const std::string world = argv[1];
  std::string node_key;
  std::ifstream(world + "/node_netns") >> node_key;
  // argv[2] "mount2": the pod's view the way kernels before 5.2 get it.
  BenchPodView pod_view(world + "/pod", !(argc > 2 && std::string(argv[2]) == "mount2"));
  cni::PluginOptions options;
  options.node_config_path = world + "/node.json";
  options.new_rdma_netlink = [&]() -> StatusOr<std::unique_ptr<RdmaNetlink>> {
    return std::unique_ptr<RdmaNetlink>(new FileRdmaNetlink(world, node_key));
  };
  options.new_dcb_netlink = [] { return NewDcbNetlink(); };
  options.new_route_netlink = [] { return NewRouteNetlink(); };
  options.pod_sysfs = &pod_view;
  return testing::RunStandInPlugin(options);
}
