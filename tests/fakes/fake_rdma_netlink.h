// FakeRdmaNetlink: an in-memory RdmaNetlink for tests of the CNI and the device plugin (this
// machine's kernel has no RDMA).
//
// A FakeRdmaNetlink::World is the fake kernel: the system netns mode and the RDMA devices of each
// network namespace, keyed by the namespace's identity. A FakeRdmaNetlink is one view of that
// world, as if opened in one netns (`self`, "host" by default). MoveToNetns(dev, fd) moves a
// device from the view's netns to the netns whose identity fd has (NetnsKey(fd): the st_dev and
// st_ino of the fd, so a real Netns fd works, and so does any other open fd in a pure unit test).
// To see the pod's side, build a second view on the same world with self = NetnsKey(pod_fd).
//
// Behaviour follows the kernel (drivers/infiniband/core/device.c, nldev.c):
//   - shared mode: moving a device is refused (kFailedPrecondition);
//   - a device in World::no_netns_support (siw, rxe on old kernels) refuses the move with
//     kUnimplemented "... no disassociate support";
//   - an unknown device is kNotFound; SetNetnsMode while World::mode_busy is kUnavailable (EBUSY);
//   - a move is looked up twice, as the kernel does: the device must be visible from the socket's
//     netns (nldev_set_doit: ib_device_get_by_index(sock_net(skb->sk), ...)) AND be in the
//     CALLING THREAD's current netns (ib_device_set_netns_put passes current->nsproxy->net_ns
//     to rdma_dev_change_netns, which answers -ENODEV when the device is not there). So a socket
//     opened in the pod but used after switching back to the node's netns cannot move the
//     device home: kNotFound "No such device". The thread check applies when the view is keyed
//     by a real netns (NetnsKey, "<dev>:<ino>"); symbolic keys ("host") in pure unit tests have
//     no thread to compare with;
//   - a moved device is unregistered and registered again in its new netns (rdma_dev_change_netns
//     -> disable_device/enable_device_and_get): every ib_client's per-device state is dropped and
//     re-created. World::on_move(dev, to_key) lets a test mirror that on its fixtures (e.g. the
//     rdma_cm configfs default_roce_tos reads 0 again: cma_remove_one/cma_add_one), and move the
//     device's sysfs entries with testing::NetnsSysfs::MoveRdmaDevice (support/sysfs_builder.h),
//     so sysfs and the nldev dump agree: in exclusive mode the node's view and ListDevices() in
//     the node's netns (ib_enum_all_devs skips !rdma_dev_access_netns) both stop showing it.
// Knobs: World::fail_<op> make the next call of <op> return that Status (then reset to OK).
//
// Thread safety: none; tests only.
#pragma once

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmak8s/netlink/rdma_netlink.h"

namespace rdmak8s {

class FakeRdmaNetlink : public RdmaNetlink {
 public:
  struct World {
    RdmaNetnsMode mode = RdmaNetnsMode::kExclusive;
    // netns key -> devices visible there (in exclusive mode).
    std::map<std::string, std::vector<RdmaLinkInfo>> devices;
    // Device names whose driver cannot change netns (MoveToNetns -> kUnimplemented).
    std::set<std::string> no_netns_support;
    // SetNetnsMode answers EBUSY (the kernel does once other netns hold devices).
    bool mode_busy = false;
    // One-shot injected failures.
    Status fail_list, fail_get_mode, fail_set_mode, fail_move, fail_rename;
    // Every mutating call, in order: "move mlx5_0 -> <key>", "rename a -> b", "mode exclusive".
    std::vector<std::string> calls;
    uint32_t next_index = 1;
    // Called after each successful move (device name, target netns key).
    std::function<void(const std::string&, const std::string&)> on_move;
  };

  explicit FakeRdmaNetlink(std::shared_ptr<World> world = std::make_shared<World>(),
                           std::string self = "host")
      : world_(std::move(world)), self_(std::move(self)) {}

  // The identity of the netns (or any file) `fd` refers to: "<st_dev>:<st_ino>"; "" if fstat fails.
  static std::string NetnsKey(int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return "";
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }

  // The identity of the calling thread's current netns ("" if it cannot be read).
  static std::string CallerNetnsKey() {
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    std::string key = NetnsKey(fd);
    close(fd);
    return key;
  }

  World& world() { return *world_; }
  const std::string& self() const { return self_; }

  // Adds a device to this view's netns; returns its index.
  uint32_t AddDevice(std::string name, uint32_t num_ports = 1, std::string node_guid = "") {
    RdmaLinkInfo d;
    d.index = world_->next_index++;
    d.name = std::move(name);
    d.num_ports = num_ports;
    d.node_guid = std::move(node_guid);
    world_->devices[self_].push_back(d);
    return d.index;
  }
  // Device names visible in the netns with this key (exclusive-mode view).
  std::vector<std::string> DeviceNamesIn(const std::string& key) const {
    std::vector<std::string> names;
    auto it = world_->devices.find(key);
    if (it == world_->devices.end()) return names;
    for (const auto& d : it->second) names.push_back(d.name);
    return names;
  }

  StatusOr<std::vector<RdmaLinkInfo>> ListDevices() override {
    if (Status s = TakeFailure(world_->fail_list); !s.ok()) return s;
    if (world_->mode == RdmaNetnsMode::kShared) {  // every netns sees every device
      std::vector<RdmaLinkInfo> all;
      for (const auto& [key, devs] : world_->devices) all.insert(all.end(), devs.begin(), devs.end());
      std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.index < b.index; });
      return all;
    }
    auto it = world_->devices.find(self_);
    if (it == world_->devices.end()) return std::vector<RdmaLinkInfo>{};
    return it->second;
  }

  StatusOr<RdmaNetnsMode> GetNetnsMode() override {
    if (Status s = TakeFailure(world_->fail_get_mode); !s.ok()) return s;
    return world_->mode;
  }

  Status SetNetnsMode(RdmaNetnsMode mode) override {
    if (Status s = TakeFailure(world_->fail_set_mode); !s.ok()) return s;
    if (world_->mode_busy && mode != world_->mode) {
      return UnavailableError("set RDMA netns mode " + std::string(RdmaNetnsModeName(mode)) +
                              ": Device or resource busy");
    }
    world_->mode = mode;
    world_->calls.push_back("mode " + std::string(RdmaNetnsModeName(mode)));
    return Status::Ok();
  }

  Status MoveToNetns(std::string_view rdma_dev, int netns_fd) override {
    const std::string what = "move RDMA device " + std::string(rdma_dev) + " to netns";
    if (Status s = TakeFailure(world_->fail_move); !s.ok()) return s;
    auto& mine = world_->devices[self_];
    auto it = std::find_if(mine.begin(), mine.end(), [&](auto& d) { return d.name == rdma_dev; });
    if (it == mine.end()) return NotFoundError(what + ": no such RDMA device in this netns");
    if (self_.find(':') != std::string::npos && CallerNetnsKey() != self_) {
      // rdma_dev_change_netns: !net_eq(current->nsproxy->net_ns, device's net) -> -ENODEV.
      return NotFoundError(what + ": No such device (the calling thread is not in the device's netns)");
    }
    if (world_->mode == RdmaNetnsMode::kShared) {
      return FailedPreconditionError(what + ": RDMA subsystem is in shared netns mode");
    }
    if (world_->no_netns_support.count(it->name)) {
      return UnimplementedError(what + ": Operation not supported (kernel: " + it->name +
                                ": no disassociate support)");
    }
    std::string key = NetnsKey(netns_fd);
    if (key.empty()) return InvalidArgumentError(what + ": bad netns fd");
    RdmaLinkInfo d = *it;
    mine.erase(it);
    world_->devices[key].push_back(d);
    world_->calls.push_back("move " + d.name + " -> " + key);
    if (world_->on_move) world_->on_move(d.name, key);
    return Status::Ok();
  }

  Status Rename(std::string_view rdma_dev, std::string_view new_name) override {
    const std::string what = "rename RDMA device " + std::string(rdma_dev);
    if (Status s = TakeFailure(world_->fail_rename); !s.ok()) return s;
    auto& mine = world_->devices[self_];
    for (const auto& [key, devs] : world_->devices) {
      for (const auto& d : devs) {
        if (d.name == new_name) return AlreadyExistsError(what + ": " + d.name + " exists");
      }
    }
    auto it = std::find_if(mine.begin(), mine.end(), [&](auto& d) { return d.name == rdma_dev; });
    if (it == mine.end()) return NotFoundError(what + ": no such RDMA device in this netns");
    world_->calls.push_back("rename " + it->name + " -> " + std::string(new_name));
    it->name = std::string(new_name);
    return Status::Ok();
  }

 private:
  static Status TakeFailure(Status& slot) {
    Status s = slot;
    slot = Status::Ok();
    return s;
  }

  std::shared_ptr<World> world_;
  std::string self_;
};

}  // namespace rdmak8s
