#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include <infiniband/verbs.h>
#include <spdlog/spdlog.h>

#include "device-plugin/device_events.h"

namespace rdmak8s::dp {

namespace {

class IbverbsEventSource final : public DeviceEventSource {
 public:
  explicit IbverbsEventSource(int epfd) : epfd_(epfd) {}
  ~IbverbsEventSource() override {
    CloseAll();
    close(epfd_);
  }
  int fd() const override { return epfd_; }

  Status Watch(const std::vector<std::string>& rdma_devs) override {
    CloseAll();
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) return Status::Ok();  // no provider or no devices: nothing to hear
    for (int i = 0; i < n; ++i) {
      std::string name = ibv_get_device_name(list[i]);
      bool wanted = false;
      for (const auto& d : rdma_devs) wanted = wanted || d == name;
      if (!wanted) continue;
      ibv_context* ctx = ibv_open_device(list[i]);
      if (ctx == nullptr) {
        SPDLOG_WARN("async events: ibv_open_device {}: {}", name, strerror(errno));
        continue;
      }
      int flags = fcntl(ctx->async_fd, F_GETFL);
      fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = ctx->async_fd;
      epoll_ctl(epfd_, EPOLL_CTL_ADD, ctx->async_fd, &ev);
      contexts_[ctx->async_fd] = {name, ctx};
    }
    ibv_free_device_list(list);
    return Status::Ok();
  }

  Status ReadEvents(const std::function<void(const DeviceEvent&)>& on_event) override {
    epoll_event evs[16];
    int n = epoll_wait(epfd_, evs, 16, 0);
    if (n < 0 && errno != EINTR) return ErrnoError(errno, "epoll_wait async events");
    for (int i = 0; i < n; ++i) {
      auto it = contexts_.find(evs[i].data.fd);
      if (it == contexts_.end()) continue;
      ibv_async_event ev{};
      while (ibv_get_async_event(it->second.ctx, &ev) == 0) {
        DeviceEvent out{it->second.name, 0, ibv_event_type_str(ev.event_type)};
        if (ev.event_type == IBV_EVENT_PORT_ACTIVE || ev.event_type == IBV_EVENT_PORT_ERR ||
            ev.event_type == IBV_EVENT_LID_CHANGE || ev.event_type == IBV_EVENT_GID_CHANGE ||
            ev.event_type == IBV_EVENT_PKEY_CHANGE || ev.event_type == IBV_EVENT_SM_CHANGE) {
          out.port_num = ev.element.port_num;
        }
        ibv_ack_async_event(&ev);
        on_event(out);
        if (ev.event_type == IBV_EVENT_DEVICE_FATAL) break;
      }
    }
    return Status::Ok();
  }

 private:
  struct Ctx {
    std::string name;
    ibv_context* ctx = nullptr;
  };
  void CloseAll() {
    for (auto& [fd, c] : contexts_) {
      epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
      ibv_close_device(c.ctx);
    }
    contexts_.clear();
  }
  int epfd_;
  std::map<int, Ctx> contexts_;
};

}  // namespace

StatusOr<std::unique_ptr<DeviceEventSource>> NewIbverbsEventSource() {
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return ErrnoError(errno, "epoll_create1");
  return std::unique_ptr<DeviceEventSource>(new IbverbsEventSource(epfd));
}

}  // namespace rdmak8s::dp
