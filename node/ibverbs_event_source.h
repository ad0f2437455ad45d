// IbverbsEventSource: the DeviceEventSource over libibverbs' asynchronous events (one device
// context per watched device, ibv_get_async_event on its async_fd, all async fds behind one epoll
// fd), with the verbs calls behind a seam so its decoding and dispatch are tested without RDMA
// hardware: VerbsAsyncDevices (list, open) and VerbsAsyncContext (fd, next event). The real
// implementation is libibverbs; tests use an in-memory fake (tests/unit/device-plugin/).
//
// Behaviour:
//   - Watch(devs) opens a context on every wanted device the seam lists and has none yet, and
//     closes the contexts of devices no longer wanted; contexts of devices still wanted stay open
//     (reopening would drop events queued on them). A device that cannot be opened is logged and
//     skipped (the next Watch tries again).
//   - ReadEvents() delivers, without blocking, every event queued on a ready context, decoded by
//     DecodeAsyncEvent. After IBV_EVENT_DEVICE_FATAL (the device was removed, reset, or moved to
//     another network namespace, which disassociates our context) nothing more comes on that
//     context: it is closed, and the next Watch that still wants the device opens it afresh.
//   - A context whose next event cannot be read (not EAGAIN) is closed too, with one warning.
// Thread safety: one thread.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/device_events.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

// One open device context (ibv_open_device). Closed on destruction (ibv_close_device).
class VerbsAsyncContext {
 public:
  virtual ~VerbsAsyncContext() = default;
  // The context's async_fd, non-blocking; readable while an event is queued.
  virtual int fd() const = 0;
  // The next queued event, already acknowledged (ibv_get_async_event + ibv_ack_async_event);
  // nullopt when none is queued (EAGAIN).
  virtual StatusOr<std::optional<ibv_async_event>> Next() = 0;
};

class VerbsAsyncDevices {
 public:
  virtual ~VerbsAsyncDevices() = default;
  // Names of the devices libibverbs lists (ibv_get_device_list): none without a provider.
  virtual std::vector<std::string> List() = 0;
  virtual StatusOr<std::unique_ptr<VerbsAsyncContext>> Open(const std::string& rdma_dev) = 0;
};

// libibverbs itself.
std::unique_ptr<VerbsAsyncDevices> NewLibibverbsAsyncDevices();

// What `ev` on `rdma_dev` means: `what` is libibverbs' name of the event type ("port active",
// "port error", ...), except "device fatal" for IBV_EVENT_DEVICE_FATAL (which libibverbs names
// "local catastrophic error"); port_num is the event's port for port events (port
// active/error, LID/PKey/GID/SM change, client reregister), 0 for device-wide and QP/CQ/SRQ ones.
DeviceEvent DecodeAsyncEvent(const std::string& rdma_dev, const ibv_async_event& ev);

StatusOr<std::unique_ptr<DeviceEventSource>> NewIbverbsEventSource(
    std::unique_ptr<VerbsAsyncDevices> devices);

}  // namespace rdmak8s::node
