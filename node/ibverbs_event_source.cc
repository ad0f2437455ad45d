#include "node/ibverbs_event_source.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <spdlog/spdlog.h>

namespace rdmak8s::node {

namespace {

class LibibverbsContext final : public VerbsAsyncContext {
 public:
  explicit LibibverbsContext(ibv_context* ctx) : ctx_(ctx) {}
  ~LibibverbsContext() override { ibv_close_device(ctx_); }
  int fd() const override { return ctx_->async_fd; }
  StatusOr<std::optional<ibv_async_event>> Next() override {
    ibv_async_event ev{};
    if (ibv_get_async_event(ctx_, &ev) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<ibv_async_event>();
      return ErrnoError(errno, "ibv_get_async_event");
    }
    ibv_async_event copy = ev;
    ibv_ack_async_event(&ev);
    return std::optional<ibv_async_event>(copy);
  }

 private:
  ibv_context* ctx_;
};

class LibibverbsDevices final : public VerbsAsyncDevices {
 public:
  std::vector<std::string> List() override {
    std::vector<std::string> out;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) return out;  // no provider or no devices: nothing to hear
    for (int i = 0; i < n; ++i) out.emplace_back(ibv_get_device_name(list[i]));
    ibv_free_device_list(list);
    return out;
  }
  StatusOr<std::unique_ptr<VerbsAsyncContext>> Open(const std::string& rdma_dev) override {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) return NotFoundError("ibv_open_device " + rdma_dev + ": not listed");
    ibv_context* ctx = nullptr;
    int err = ENODEV;
    for (int i = 0; i < n && ctx == nullptr; ++i) {
      if (rdma_dev != ibv_get_device_name(list[i])) continue;
      ctx = ibv_open_device(list[i]);
      if (ctx == nullptr) err = errno;
    }
    ibv_free_device_list(list);
    if (ctx == nullptr) return ErrnoError(err, "ibv_open_device " + rdma_dev);
    int flags = fcntl(ctx->async_fd, F_GETFL);
    if (flags < 0 || fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
      err = errno;
      ibv_close_device(ctx);
      return ErrnoError(err, "set O_NONBLOCK on the async fd of " + rdma_dev);
    }
    return std::unique_ptr<VerbsAsyncContext>(new LibibverbsContext(ctx));
  }
};

class IbverbsEventSource final : public DeviceEventSource {
 public:
  IbverbsEventSource(int epfd, std::unique_ptr<VerbsAsyncDevices> devices)
      : epfd_(epfd), devices_(std::move(devices)) {}
  ~IbverbsEventSource() override {
    while (!contexts_.empty()) Close(contexts_.begin());
    close(epfd_);
  }
  int fd() const override { return epfd_; }

  Status Watch(const std::vector<std::string>& rdma_devs) override {
    for (auto it = contexts_.begin(); it != contexts_.end();) {
      bool wanted = std::find(rdma_devs.begin(), rdma_devs.end(), it->second.name) != rdma_devs.end();
      it = wanted ? std::next(it) : Close(it);
    }
    std::vector<std::string> listed = devices_->List();
    for (const auto& name : rdma_devs) {
      if (std::find(listed.begin(), listed.end(), name) == listed.end()) continue;
      bool open = std::any_of(contexts_.begin(), contexts_.end(),
                              [&](const auto& c) { return c.second.name == name; });
      if (open) continue;
      auto ctx = devices_->Open(name);
      if (!ctx.ok()) {
        SPDLOG_WARN("async events: {}", ctx.status().message());
        continue;
      }
      int fd = (*ctx)->fd();
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        SPDLOG_WARN("async events: epoll_ctl add {}: {}", name, strerror(errno));
        continue;  // the context closes here
      }
      contexts_[fd] = Ctx{name, std::move(ctx).value()};
    }
    return Status::Ok();
  }

  Status ReadEvents(const std::function<void(const DeviceEvent&)>& on_event) override {
    epoll_event evs[16];
    int n = epoll_wait(epfd_, evs, 16, 0);
    if (n < 0 && errno != EINTR) return ErrnoError(errno, "epoll_wait async events");
    for (int i = 0; i < n; ++i) {
      auto it = contexts_.find(evs[i].data.fd);
      if (it == contexts_.end()) continue;
      while (true) {
        StatusOr<std::optional<ibv_async_event>> ev = it->second.ctx->Next();
        if (!ev.ok()) {
          SPDLOG_WARN("async events of {}: {}: closing its context", it->second.name,
                      ev.status().message());
          Close(it);
          break;
        }
        if (!ev->has_value()) break;
        on_event(DecodeAsyncEvent(it->second.name, **ev));
        if ((*ev)->event_type == IBV_EVENT_DEVICE_FATAL) {
          Close(it);  // nothing more comes on it; a later Watch reopens the device
          break;
        }
      }
    }
    return Status::Ok();
  }

 private:
  struct Ctx {
    std::string name;
    std::unique_ptr<VerbsAsyncContext> ctx;
  };
  std::map<int, Ctx>::iterator Close(std::map<int, Ctx>::iterator it) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, it->first, nullptr);
    return contexts_.erase(it);  // destroys the context: ibv_close_device
  }

  int epfd_;
  std::unique_ptr<VerbsAsyncDevices> devices_;
  std::map<int, Ctx> contexts_;  // async fd -> context
};

}  // namespace

std::unique_ptr<VerbsAsyncDevices> NewLibibverbsAsyncDevices() {
  return std::make_unique<LibibverbsDevices>();
}

DeviceEvent DecodeAsyncEvent(const std::string& rdma_dev, const ibv_async_event& ev) {
  DeviceEvent out{rdma_dev, 0, ibv_event_type_str(ev.event_type)};
  switch (ev.event_type) {
    // The events whose element is a port (ibv_get_async_event(3)).
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
      out.port_num = static_cast<uint32_t>(ev.element.port_num);
      break;
    case IBV_EVENT_DEVICE_FATAL:
      out.what = "device fatal";  // libibverbs calls it "local catastrophic error"
      break;
    default:
      break;
  }
  return out;
}

StatusOr<std::unique_ptr<DeviceEventSource>> NewIbverbsEventSource(
    std::unique_ptr<VerbsAsyncDevices> devices) {
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return ErrnoError(errno, "epoll_create1");
  return std::unique_ptr<DeviceEventSource>(new IbverbsEventSource(epfd, std::move(devices)));
}

StatusOr<std::unique_ptr<DeviceEventSource>> NewIbverbsEventSource() {
  return NewIbverbsEventSource(NewLibibverbsAsyncDevices());
}

}  // namespace rdmak8s::node
