// world_plugin: the rdmak8s CNI binary's wiring (cni/main.cc) over a "world" directory that
// stands in for the RDMA hardware this machine lacks, shared by every process of a test: the
// crash test and the concurrency test exec it (directly, or as plugin "rdmak8s" through libcni).
// Built against rdmak8s_cni_crash_points (cni/crash_point.h's hooks compiled in).
//
// $RDMAK8S_TEST_WORLD names the world (tests/reliability/cni_world.h builds it):
//   node.json            the node configuration (sysfsRoot node/, configfsRoot config/, stateDir)
//   node/                the node's sysfs; class/infiniband/<dev> shows where the device is
//   views/<netns key>/   a pod's sysfs view: the RDMA devices moved there (class/infiniband/<dev>
//                        and devices/virtual/infiniband/<dev>, both netns tagged)
//   mode                 "exclusive" or "shared" (the kernel's RDMA netns mode)
//   rdma/<dev>           the netns key ("<st_dev>:<st_ino>") device <dev> is in
// RDMA netlink: MoveToNetns renames the class link between trees and rewrites rdma/<dev>, and
// resets rdma_cm's default_roce_tos to 0 as the kernel's re-registration does. DCB netlink:
// none (kUnimplemented). rtnetlink and network namespaces are real.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  f >> s;
  return s;
}

bool WriteAtomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp);
    f << text << "\n";
    if (!f) return false;
  }
  return rename(tmp.c_str(), path.c_str()) == 0;
}

class World {
 public:
  explicit World(std::string dir) : dir_(std::move(dir)), node_key_(Slurp(dir_ + "/node_netns")) {}
  bool Shared() const { return Slurp(dir_ + "/mode") == "shared"; }
  std::string Where(const std::string& dev) const { return Slurp(dir_ + "/rdma/" + dev); }
  std::vector<std::string> Devices() const {
    std::vector<std::string> out;
    if (DIR* d = opendir((dir_ + "/rdma").c_str())) {
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n[0] != '.' && n.find(".tmp.") == std::string::npos) out.push_back(n);
      }
      closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The sysfs tree netns `key` sees (created on first use).
  std::string RootOf(const std::string& key) const {
    if (key == node_key_ || Shared()) return dir_ + "/node";
    const std::string root = dir_ + "/views/" + key;
    mkdir((dir_ + "/views").c_str(), 0755);
    mkdir(root.c_str(), 0755);
    mkdir((root + "/class").c_str(), 0755);
    mkdir((root + "/class/infiniband").c_str(), 0755);
    mkdir((root + "/devices").c_str(), 0755);
    mkdir((root + "/devices/virtual").c_str(), 0755);
    mkdir((root + "/devices/virtual/infiniband").c_str(), 0755);
    return root;
  }
  Status Move(const std::string& dev, const std::string& from, const std::string& to) const {
    // class/infiniband/<dev> and the device's directory are netns tagged: both move.
    for (const std::string& rel : std::vector<std::string>{"/devices/virtual/infiniband/" + dev, "/class/infiniband/" + dev}) {
      if (from != to && rename((RootOf(from) + rel).c_str(), (RootOf(to) + rel).c_str()) != 0) {
        return ErrnoError(errno, "world: move " + rel + " of " + dev);
      }
    }
    if (!WriteAtomic(dir_ + "/rdma/" + dev, to)) return InternalError("world: record move of " + dev);
    const std::string tos = dir_ + "/config/rdma_cm/" + dev + "/ports/1/default_roce_tos";
    if (access(tos.c_str(), F_OK) == 0 && !WriteAtomic(tos, "0")) return InternalError("world: tos reset");
    return Status::Ok();
  }

 private:
  std::string dir_, node_key_;
};

class WorldRdmaNetlink : public RdmaNetlink {
 public:
  explicit WorldRdmaNetlink(const World& w) : w_(w), self_(ThreadNetnsKey()) {}
  StatusOr<std::vector<RdmaLinkInfo>> ListDevices() override {
    std::vector<RdmaLinkInfo> out;
    uint32_t index = 0;
    for (const auto& dev : w_.Devices()) {
      ++index;
      if (w_.Shared() || w_.Where(dev) == self_) out.push_back(RdmaLinkInfo{.index = index, .name = dev, .num_ports = 1, .node_guid = ""});
    }
    return out;
  }
  StatusOr<RdmaNetnsMode> GetNetnsMode() override {
    return w_.Shared() ? RdmaNetnsMode::kShared : RdmaNetnsMode::kExclusive;
  }
  Status SetNetnsMode(RdmaNetnsMode) override { return UnimplementedError("world: no mode change"); }
  Status MoveToNetns(std::string_view d, int netns_fd) override {
    const std::string dev(d);
    if (w_.Shared()) return FailedPreconditionError("move RDMA device: shared netns mode");
    // As the kernel: the device must be in the socket's netns and in the calling thread's.
    if (w_.Where(dev) != self_ || ThreadNetnsKey() != self_) return NotFoundError("move RDMA device " + dev + ": No such device");
    return w_.Move(dev, self_, NetnsKeyOf(netns_fd));
  }
  Status Rename(std::string_view, std::string_view) override { return UnimplementedError("world: no rename"); }

 private:
  const World& w_;
  std::string self_;
};

class WorldPodView : public cni::SysfsView {
 public:
  explicit WorldPodView(const World& w) : w_(w) {}
  StatusOr<std::unique_ptr<cni::SysfsRoot>> Open(const Netns& ns) override {
    return std::make_unique<cni::SysfsRoot>(w_.RootOf(NetnsKeyOf(ns.fd())));
  }

 private:
  const World& w_;
};

}  // namespace

int main() {
  const char* dir = std::getenv("RDMAK8S_TEST_WORLD");
  if (dir == nullptr || *dir == '\0') {
    std::fprintf(stderr, "world_plugin: RDMAK8S_TEST_WORLD is not set\n");
    return 2;
  }
  World world(dir);
  WorldPodView view(world);
  cni::PluginOptions options;
  options.node_config_path = std::string(dir) + "/node.json";
  options.new_rdma_netlink = [&]() -> StatusOr<std::unique_ptr<RdmaNetlink>> {
    return std::unique_ptr<RdmaNetlink>(new WorldRdmaNetlink(world));
  };
  options.new_dcb_netlink = []() -> StatusOr<std::unique_ptr<DcbNetlink>> {
    return UnimplementedError("world: no DCB netlink");
  };
  options.new_route_netlink = [] { return NewRouteNetlink(); };
  options.pod_sysfs = &view;
  return testing::RunStandInPlugin(options);
}
