#include "node/uevent.h"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace rdmak8s::node {

std::optional<Uevent> ParseUevent(std::string_view datagram) {
  // The header "<action>@<devpath>" ends at the first NUL; udev's messages start "libudev\0".
  size_t end = datagram.find('\0');
  std::string_view header = datagram.substr(0, end);
  size_t at = header.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == header.size()) return std::nullopt;
  Uevent ev;
  std::string_view rest = end == std::string_view::npos ? std::string_view() : datagram.substr(end + 1);
  while (!rest.empty()) {
    size_t n = rest.find('\0');
    std::string_view kv = rest.substr(0, n);
    size_t eq = kv.find('=');
    if (eq != std::string_view::npos && eq > 0) {
      ev.env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
    if (n == std::string_view::npos) break;
    rest.remove_prefix(n + 1);
  }
  auto get = [&](const char* key) {
    auto it = ev.env.find(key);
    return it == ev.env.end() ? std::string() : it->second;
  };
  ev.action = get("ACTION");
  ev.subsystem = get("SUBSYSTEM");
  ev.devpath = get("DEVPATH");
  if (ev.devpath.empty()) ev.devpath = std::string(header.substr(at + 1));
  if (ev.action.empty() || ev.subsystem.empty()) return std::nullopt;
  return ev;
}

std::vector<DeviceEvent> RdmaDeviceEventsOf(const Uevent& uevent) {
  if (uevent.subsystem != "infiniband") return {};
  auto last = [](const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  };
  auto it = uevent.env.find("NAME");
  std::string name = it != uevent.env.end() && !it->second.empty() ? it->second : last(uevent.devpath);
  if (name.empty()) return {};
  if (uevent.action == "add") return {{name, 0, "registered"}};
  if (uevent.action == "remove") return {{name, 0, "unregistered"}};
  if (uevent.action == "move") {
    std::vector<DeviceEvent> out;
    auto old = uevent.env.find("DEVPATH_OLD");
    // A move that keeps the name is no rename: the kernel re-publishes a device it moved to
    // another netns (rdma_dev_change_netns -> device_rename with the same name). Re-read it
    // (registered): the tracker tells "moved into a pod" from "gone"; unregistering would make
    // every device a pod holds Unhealthy.
    if (old != uevent.env.end() && !last(old->second).empty() && last(old->second) != name) {
      out.push_back({last(old->second), 0, "unregistered"});
    }
    out.push_back({name, 0, "registered"});
    return out;
  }
  return {};
}

namespace {

class UeventSource final : public DeviceEventSource {
 public:
  explicit UeventSource(int fd) : fd_(fd) {}
  ~UeventSource() override {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const override { return fd_; }

  Status ReadEvents(const std::function<void(const DeviceEvent&)>& on_event) override {
    // A uevent is at most UEVENT_BUFFER_SIZE (2048) bytes of environment plus the header.
    char buf[8192];
    while (true) {
      sockaddr_nl from{};
      iovec iov{buf, sizeof(buf)};
      msghdr msg{};
      msg.msg_name = &from;
      msg.msg_namelen = sizeof(from);
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
        // ENOBUFS: the socket overflowed and events were lost; the caller rescans.
        return ErrnoError(errno, "read uevent");
      }
      if (n == 0) return Status::Ok();
      // Only the kernel speaks on group 1; anything else (nl_pid != 0) is not to be trusted.
      if (msg.msg_namelen == sizeof(sockaddr_nl) && from.nl_family == AF_NETLINK && from.nl_pid != 0) {
        continue;
      }
      std::optional<Uevent> ev = ParseUevent(std::string_view(buf, static_cast<size_t>(n)));
      if (!ev) continue;
      for (const DeviceEvent& d : RdmaDeviceEventsOf(*ev)) on_event(d);
    }
  }

  Status Watch(const std::vector<std::string>&) override { return Status::Ok(); }

 private:
  int fd_;
};

}  // namespace

std::unique_ptr<DeviceEventSource> NewUeventSourceOnFd(int fd) {
  return std::make_unique<UeventSource>(fd);
}

StatusOr<std::unique_ptr<DeviceEventSource>> NewKernelUeventSource() {
  int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
  if (fd < 0) return ErrnoError(errno, "uevent socket");
  // Bursts (a driver loading on a big host) must not overflow the default buffer.
  int size = 1 << 20;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = 1;  // kernel uevents (udev's re-broadcasts are group 2)
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    close(fd);
    return ErrnoError(err, "bind uevent socket");
  }
  return NewUeventSourceOnFd(fd);
}

}  // namespace rdmak8s::node
