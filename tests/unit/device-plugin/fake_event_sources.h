// In-memory LinkMonitor and node::DeviceEventSource for the device plugin daemon tests: events
// injected from the test thread are queued and signalled on an eventfd, which the daemon's
// epoll sees exactly like the real netlink socket / verbs async fd.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <deque>
#include <mutex>
#include <vector>

#include "node/device_events.h"
#include "rdmak8s/netlink/route_netlink.h"

namespace rdmak8s::dp {

template <typename Event>
class EventQueue {
 public:
  EventQueue() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~EventQueue() { close(fd_); }
  int fd() const { return fd_; }
  void Push(Event e) { PushAll({std::move(e)}); }
  // One batch: whoever reads the fd sees all of them in one read.
  void PushAll(std::vector<Event> es) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& e : es) q_.push_back(std::move(e));
    }
    uint64_t one = 1;
    (void)!write(fd_, &one, sizeof(one));
  }
  std::deque<Event> Drain() {
    uint64_t v;
    (void)!read(fd_, &v, sizeof(v));
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<Event> out;
    out.swap(q_);
    return out;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::deque<Event> q_;
};

class FakeLinkMonitor : public LinkMonitor {
 public:
  int fd() const override { return q_.fd(); }
  Status ReadEvents(const std::function<void(const LinkEvent&)>& on_event) override {
    for (const auto& e : q_.Drain()) on_event(e);
    return Status::Ok();
  }
  // Thread safe.
  void Inject(const std::string& netdev, bool up, LinkEvent::Type type = LinkEvent::Type::kNew) {
    LinkEvent e;
    e.type = type;
    e.link.name = netdev;
    e.link.admin_up = up;
    e.link.oper_up = up;
    q_.Push(e);
  }

 private:
  EventQueue<LinkEvent> q_;
};

class FakeDeviceEventSource : public node::DeviceEventSource {
 public:
  int fd() const override { return q_.fd(); }
  Status ReadEvents(const std::function<void(const node::DeviceEvent&)>& on_event) override {
    for (const auto& e : q_.Drain()) on_event(e);
    return Status::Ok();
  }
  Status Watch(const std::vector<std::string>& rdma_devs) override {
    std::lock_guard<std::mutex> lock(mu_);
    watched_ = rdma_devs;
    ++watch_calls_;
    return Status::Ok();
  }
  // Thread safe.
  void Inject(node::DeviceEvent e) { q_.Push(std::move(e)); }
  // Several events the source delivers in one read (one batch).
  void InjectBatch(std::vector<node::DeviceEvent> es) { q_.PushAll(std::move(es)); }
  std::vector<std::string> watched() const {
    std::lock_guard<std::mutex> lock(mu_);
    return watched_;
  }
  int watch_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return watch_calls_;
  }

 private:
  EventQueue<node::DeviceEvent> q_;
  mutable std::mutex mu_;
  std::vector<std::string> watched_;
  int watch_calls_ = 0;
};

}  // namespace rdmak8s::dp
