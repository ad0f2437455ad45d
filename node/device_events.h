// DeviceEventSource: asynchronous events of RDMA devices (port up/down, device fatal), the seam
// over libibverbs' async event channel (ibv_get_async_event on each device context's async_fd).
//
// Event-loop friendly like LinkMonitor: poll fd(), then ReadEvents() delivers what is queued
// without blocking. Watch() (re)opens the devices to listen on. IbverbsEventSource is the real
// one; tests use a fake that writes to an eventfd. Thread safety: one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

struct DeviceEvent {
  std::string rdma_dev;
  uint32_t port_num = 0;  // 0 for device-wide events
  std::string what;       // "port active", "port error", "device fatal", ...
  friend bool operator==(const DeviceEvent&, const DeviceEvent&) = default;
};

class DeviceEventSource {
 public:
  virtual ~DeviceEventSource() = default;
  virtual int fd() const = 0;
  virtual Status ReadEvents(const std::function<void(const DeviceEvent&)>& on_event) = 0;
  // Listen on exactly these devices (ones libibverbs does not list are skipped, not errors).
  virtual Status Watch(const std::vector<std::string>& rdma_devs) = 0;
};

// libibverbs: one context per watched device, all async fds behind one epoll fd
// (ibverbs_event_source.h).
StatusOr<std::unique_ptr<DeviceEventSource>> NewIbverbsEventSource();

}  // namespace rdmak8s::node
