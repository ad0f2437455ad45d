#include "fakes/fake_kubelet_slice_cleanup.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

namespace rdmak8s::fake {

FakeKubeletSliceCleanup::FakeKubeletSliceCleanup(KubeletSliceCleanupOptions options)
    : options_(std::move(options)) {}

FakeKubeletSliceCleanup::~FakeKubeletSliceCleanup() {
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    (void)::write(stop_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) thread_.join();
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void FakeKubeletSliceCleanup::Start() { options_.delete_slices(options_.node_name, ""); }

bool FakeKubeletSliceCleanup::WatchDriver(const std::string& registration_socket, const std::string& driver) {
  const size_t slash = registration_socket.rfind('/');
  if (slash == std::string::npos || thread_.joinable()) return false;
  std::string dir = registration_socket.substr(0, slash);
  std::string name = registration_socket.substr(slash + 1);
  inotify_fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (inotify_fd_ < 0 || stop_fd_ < 0 ||
      inotify_add_watch(inotify_fd_, dir.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) < 0) {
    return false;
  }
  thread_ = std::thread([this, dir, name, driver] { Loop(dir, name, driver); });
  return true;
}

void FakeKubeletSliceCleanup::Loop(std::string dir, std::string name, std::string driver) {
  const std::string path = dir + "/" + name;
  bool scheduled = false;
  auto cleanup_at = std::chrono::steady_clock::time_point::max();
  auto present = [&] {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
  };
  while (true) {
    int timeout_ms = -1;
    if (scheduled) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(cleanup_at - std::chrono::steady_clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    std::array<pollfd, 2> fds{{{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}}};
    int r = ::poll(fds.data(), fds.size(), timeout_ms);
    if (r < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      alignas(inotify_event) std::array<char, 4096> buf{};
      for (ssize_t n; (n = ::read(inotify_fd_, buf.data(), buf.size())) > 0;) {
        for (char* p = buf.data(); p < buf.data() + n;) {
          auto* ev = reinterpret_cast<inotify_event*>(p);
          p += sizeof(inotify_event) + ev->len;
          if (ev->len == 0 || name != ev->name) continue;
          if ((ev->mask & (IN_DELETE | IN_MOVED_FROM)) != 0) {
            // kubelet's plugin watcher deregisters the driver and schedules the cleanup.
            cleanup_at = std::chrono::steady_clock::now() + options_.driver_cleanup_delay;
            scheduled = true;
          } else if (options_.driver_cleanup_delay.count() > 0) {
            scheduled = false;  // registered again in time: the cleanup is cancelled
          }
        }
      }
    }
    if (scheduled && std::chrono::steady_clock::now() >= cleanup_at) {
      scheduled = false;
      if (options_.driver_cleanup_delay.count() > 0 && present()) continue;
      options_.delete_slices(options_.node_name, driver);
      ++driver_cleanups_;
    }
  }
}

}  // namespace rdmak8s::fake
