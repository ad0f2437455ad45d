#include "dra/health_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include <spdlog/spdlog.h>

#include "node/tracker_events.h"

namespace rdmak8s::dra {

HealthWatcher::HealthWatcher(HealthWatcherDeps deps, std::string sysfs_root, DeviceCatalog* catalog,
                             std::chrono::seconds rescan_interval,
                             std::chrono::milliseconds port_poll_interval)
    : deps_(std::move(deps)),
      tracker_(deps_.discovery.get(), std::move(sysfs_root)),
      catalog_(catalog),
      rescan_interval_(rescan_interval),
      port_poll_interval_(port_poll_interval),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      rescan_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

HealthWatcher::~HealthWatcher() {
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (rescan_fd_ >= 0) ::close(rescan_fd_);
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

void HealthWatcher::Apply(const node::TrackerEventOutcome& o) {
  if (o.rescan) return Rescan();
  if (!o.changed) return;
  if (o.devices_reread) WatchAsync();
  Publish();
}

Status HealthWatcher::Start() {
  if (stop_fd_ < 0 || rescan_fd_ < 0) return ErrnoError(errno, "eventfd");
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

void HealthWatcher::RequestRescan() {
  uint64_t one = 1;
  if (::write(rescan_fd_, &one, sizeof(one)) < 0) {
    // EAGAIN only when the counter is full: a rescan is already asked for.
  }
}

Status HealthWatcher::Run() {
  using Clock = std::chrono::steady_clock;
  auto next_rescan = Clock::now() + rescan_interval_;
  const bool polling = port_poll_interval_.count() > 0;
  auto next_port_poll = Clock::now() + port_poll_interval_;
  while (true) {
    if (deps_.on_wakeup) deps_.on_wakeup();
    pollfd fds[5];
    int n = 0;
    fds[n++] = {stop_fd_, POLLIN, 0};
    fds[n++] = {rescan_fd_, POLLIN, 0};
    int link_i = deps_.links ? n : -1;
    if (deps_.links) fds[n++] = {deps_.links->fd(), POLLIN, 0};
    int uevent_i = deps_.uevents ? n : -1;
    if (deps_.uevents) fds[n++] = {deps_.uevents->fd(), POLLIN, 0};
    int async_i = deps_.async_events ? n : -1;
    if (deps_.async_events) fds[n++] = {deps_.async_events->fd(), POLLIN, 0};
    const auto wake_at = polling ? std::min(next_rescan, next_port_poll) : next_rescan;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - Clock::now());
    int timeout = static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 3600 * 1000));
    int r = ::poll(fds, n, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "poll");
    }
    if (fds[0].revents) return Status::Ok();
    // The timers first, whether or not an event came too: a steady stream of events must not
    // starve the rescan or the port poll.
    bool rescan_asked = false;
    if (fds[1].revents) {
      uint64_t asked = 0;
      rescan_asked = ::read(rescan_fd_, &asked, sizeof(asked)) == sizeof(asked);
    }
    const auto now = Clock::now();
    if (rescan_asked || now >= next_rescan) {
      Rescan();
      next_rescan = Clock::now() + rescan_interval_;
      next_port_poll = Clock::now() + port_poll_interval_;  // the rescan read the ports too
    } else if (polling && now >= next_port_poll) {
      Apply(node::PollPortStates(tracker_));
      next_port_poll = Clock::now() + port_poll_interval_;
    }
    if (r == 0) continue;
    if (link_i >= 0 && fds[link_i].revents) Apply(node::ApplyLinkEvents(tracker_, *deps_.links));
    if (uevent_i >= 0 && fds[uevent_i].revents) Apply(node::ApplyUevents(tracker_, *deps_.uevents));
    if (async_i >= 0 && fds[async_i].revents) {
      node::AsyncEventsOutcome o = node::ReadAsyncEvents(*deps_.async_events);
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
