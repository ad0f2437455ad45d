// In-memory VerbsAsyncDevices for IbverbsEventSource tests: devices by name, each context's
// async fd an eventfd (semaphore mode) that is readable exactly while events are queued, so the
// source's epoll sees it like a real async_fd. Counts opens and closes per device.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "node/ibverbs_event_source.h"

namespace rdmak8s::node {

class FakeVerbsAsyncDevices : public VerbsAsyncDevices {
 public:
  struct Device {
    int opens = 0;
    int closes = 0;
    bool fail_open = false;
    bool fail_next = false;  // Next() fails as a read error
    // The open context's queue, while one is open.
    struct Queue {
      int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
      std::deque<ibv_async_event> events;
      ~Queue() { close(fd); }
    };
    std::shared_ptr<Queue> open;
  };

  // Not thread safe: the tests drive the source from their own thread.
  void Add(const std::string& name) { devices_[name]; }
  void Remove(const std::string& name) { devices_.erase(name); }
  Device& at(const std::string& name) { return devices_.at(name); }

  // Queues an event on the device's open context. False when none is open.
  bool Push(const std::string& name, ibv_event_type type, int port = 0) {
    auto& d = devices_.at(name);
    if (!d.open) return false;
    ibv_async_event ev{};
    ev.event_type = type;
    if (port) ev.element.port_num = port;
    d.open->events.push_back(ev);
    uint64_t one = 1;
    return write(d.open->fd, &one, sizeof(one)) == sizeof(one);
  }

  std::vector<std::string> List() override {
    std::vector<std::string> out;
    for (const auto& [name, d] : devices_) out.push_back(name);
    return out;
  }

  StatusOr<std::unique_ptr<VerbsAsyncContext>> Open(const std::string& rdma_dev) override {
    auto it = devices_.find(rdma_dev);
    if (it == devices_.end()) return NotFoundError("ibv_open_device " + rdma_dev + ": not listed");
    if (it->second.fail_open) return ErrnoError(EPERM, "ibv_open_device " + rdma_dev);
    it->second.opens++;
    it->second.open = std::make_shared<Device::Queue>();
    return std::unique_ptr<VerbsAsyncContext>(new Context(this, rdma_dev, it->second.open));
  }

 private:
  class Context : public VerbsAsyncContext {
   public:
    Context(FakeVerbsAsyncDevices* owner, std::string name, std::shared_ptr<Device::Queue> q)
        : owner_(owner), name_(std::move(name)), q_(std::move(q)) {}
    ~Context() override {
      auto it = owner_->devices_.find(name_);
      if (it == owner_->devices_.end()) return;
      it->second.closes++;
      if (it->second.open == q_) it->second.open.reset();
    }
    int fd() const override { return q_->fd; }
    StatusOr<std::optional<ibv_async_event>> Next() override {
      auto it = owner_->devices_.find(name_);
      if (it != owner_->devices_.end() && it->second.fail_next) return ErrnoError(EIO, "ibv_get_async_event");
      uint64_t v;
      if (read(q_->fd, &v, sizeof(v)) != sizeof(v)) return std::optional<ibv_async_event>();
      ibv_async_event ev = q_->events.front();
      q_->events.pop_front();
      return std::optional<ibv_async_event>(ev);
    }

   private:
    FakeVerbsAsyncDevices* owner_;
    std::string name_;
    std::shared_ptr<Device::Queue> q_;
  };

  std::map<std::string, Device> devices_;
};

}  // namespace rdmak8s::node
