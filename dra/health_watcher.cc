#include "dra/health_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include <spdlog/spdlog.h>

#include "device-plugin/tracker_events.h"

namespace rdmak8s::dra {

HealthWatcher::HealthWatcher(HealthWatcherDeps deps, std::string sysfs_root, DeviceCatalog* catalog,
                             std::chrono::seconds rescan_interval)
    : deps_(std::move(deps)),
      tracker_(deps_.discovery.get(), std::move(sysfs_root)),
      catalog_(catalog),
      rescan_interval_(rescan_interval),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

HealthWatcher::~HealthWatcher() {
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void HealthWatcher::Publish() { catalog_->Update(deps_.filter.Apply(tracker_.devices())); }

void HealthWatcher::WatchAsync() {
  if (!deps_.async_events) return;
  if (Status s = deps_.async_events->Watch(tracker_.Present()); !s.ok()) {
    SPDLOG_WARN("verbs async events: {}", s.message());
  }
}

void HealthWatcher::Rescan() {
  if (Status s = tracker_.Rescan(); !s.ok()) {
    SPDLOG_ERROR("{}", s.message());
    return;
  }
  WatchAsync();
  Publish();
}

Status HealthWatcher::Start() {
  if (stop_fd_ < 0) return ErrnoError(errno, "eventfd");
  RDMAK8S_RETURN_IF_ERROR(tracker_.Rescan());
  WatchAsync();
  Publish();
  return Status::Ok();
}

void HealthWatcher::Stop() {
  uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof(one)) < 0) {
    // The counter cannot overflow from one write per Stop: nothing to do.
  }
}

Status HealthWatcher::Run() {
  auto next_rescan = std::chrono::steady_clock::now() + rescan_interval_;
  while (true) {
    if (deps_.on_wakeup) deps_.on_wakeup();
    pollfd fds[4];
    int n = 0;
    fds[n++] = {stop_fd_, POLLIN, 0};
    int link_i = deps_.links ? n : -1;
    if (deps_.links) fds[n++] = {deps_.links->fd(), POLLIN, 0};
    int uevent_i = deps_.uevents ? n : -1;
    if (deps_.uevents) fds[n++] = {deps_.uevents->fd(), POLLIN, 0};
    int async_i = deps_.async_events ? n : -1;
    if (deps_.async_events) fds[n++] = {deps_.async_events->fd(), POLLIN, 0};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_rescan - std::chrono::steady_clock::now());
    int timeout = static_cast<int>(std::max<int64_t>(0, wait.count()));
    int r = ::poll(fds, n, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "poll");
    }
    if (fds[0].revents) return Status::Ok();
    if (r == 0) {
      Rescan();
      next_rescan = std::chrono::steady_clock::now() + rescan_interval_;
      continue;
    }
    auto apply = [&](const dp::TrackerEventOutcome& o) {
      if (o.rescan) return Rescan();
      if (!o.changed) return;
      if (o.devices_reread) WatchAsync();
      Publish();
    };
    if (link_i >= 0 && fds[link_i].revents) apply(dp::ApplyLinkEvents(tracker_, *deps_.links));
    if (uevent_i >= 0 && fds[uevent_i].revents) apply(dp::ApplyUevents(tracker_, *deps_.uevents));
    if (async_i >= 0 && fds[async_i].revents) {
      dp::AsyncEventsOutcome o = dp::ReadAsyncEvents(*deps_.async_events);
      if (o.rescan) {
        Rescan();
      } else if (!o.devices.empty()) {
        for (const auto& d : o.devices) tracker_.Refresh(d);
        Publish();
      }
    }
  }
}

}  // namespace rdmak8s::dra
