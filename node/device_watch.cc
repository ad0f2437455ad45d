// DeviceWatch (device_watch.h): the one device watch both agents run.
#include "node/device_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include <spdlog/spdlog.h>

namespace rdmak8s::node {

DeviceWatch::DeviceWatch(DeviceSources sources, DeviceWatchOptions options, DeviceWatchHooks hooks)
    : sources_(std::move(sources)),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      tracker_(sources_.discovery.get(), options_.sysfs_root),
      stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      rescan_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

DeviceWatch::~DeviceWatch() {
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (rescan_fd_ >= 0) ::close(rescan_fd_);
}

void DeviceWatch::Changed(bool rescanned) {
  // Re-watch before publishing: a device kubelet is told about is one whose fatal events are
  // already heard. Update reopens nothing when the present devices are what is watched.
  if (Status s = async_watch_.Update(tracker_); !s.ok()) {
    SPDLOG_WARN("verbs async events: {}", s.message());
  }
  if (hooks_.on_change) hooks_.on_change(tracker_, rescanned);
}

void DeviceWatch::Rescan() {
  const auto t0 = Clock::now();
  Status s = tracker_.Rescan();
  if (hooks_.on_rescan_timed) hooks_.on_rescan_timed(Clock::now() - t0);
  next_rescan_ = Clock::now() + options_.rescan_interval;
  next_port_poll_ = Clock::now() + options_.port_poll_interval;  // the rescan read the ports too
  if (!s.ok()) {
    SPDLOG_ERROR("{}", s.message());
    return;
  }
  Changed(/*rescanned=*/true);
}

Status DeviceWatch::Start() {
  if (!sources_.discovery) return InvalidArgumentError("device watch: no discovery given");
  if (stop_fd_ < 0 || rescan_fd_ < 0) return ErrnoError(errno, "eventfd");
  const auto t0 = Clock::now();
  Status s = tracker_.Rescan();
  if (hooks_.on_rescan_timed) hooks_.on_rescan_timed(Clock::now() - t0);
  next_rescan_ = Clock::now() + options_.rescan_interval;
  next_port_poll_ = Clock::now() + options_.port_poll_interval;
  RDMAK8S_RETURN_IF_ERROR(s);
  Changed(/*rescanned=*/true);
  return Status::Ok();
}

void DeviceWatch::Apply(const TrackerEventOutcome& o) {
  if (o.rescan) return Rescan();
  // Whatever changed, the present devices may have: Changed re-watches when they did (not only
  // when a device was re-read as a whole).
  if (o.changed) Changed(/*rescanned=*/false);
}

void DeviceWatch::ApplyAsyncEvents() {
  AsyncEventsOutcome o = ReadAsyncEvents(*sources_.async_events);
  if (o.rescan) {
    async_watch_.Forget();  // the source dropped the fatal device's context: reopen what is back
    return Rescan();
  }
  if (o.devices.empty()) return;
  // The whole batch, then one publish: devices that changed together are published together.
  for (const auto& d : o.devices) tracker_.Refresh(d);
  Changed(/*rescanned=*/false);
}

std::vector<int> DeviceWatch::fds() const {
  std::vector<int> out;
  if (sources_.links) out.push_back(sources_.links->fd());
  if (sources_.uevents) out.push_back(sources_.uevents->fd());
  if (sources_.async_events) out.push_back(sources_.async_events->fd());
  return out;
}

bool DeviceWatch::HandleReadable(int fd) {
  if (sources_.links && fd == sources_.links->fd()) {
    Apply(ApplyLinkEvents(tracker_, *sources_.links));
  } else if (sources_.uevents && fd == sources_.uevents->fd()) {
    Apply(ApplyUevents(tracker_, *sources_.uevents));
  } else if (sources_.async_events && fd == sources_.async_events->fd()) {
    ApplyAsyncEvents();
  } else {
    return false;
  }
  return true;
}

DeviceWatch::Clock::time_point DeviceWatch::NextWakeup() const {
  if (options_.port_poll_interval.count() <= 0) return next_rescan_;
  return std::min(next_rescan_, next_port_poll_);
}

void DeviceWatch::OnTimer(Clock::time_point now) {
  if (now >= next_rescan_) return Rescan();
  if (options_.port_poll_interval.count() > 0 && now >= next_port_poll_) {
    next_port_poll_ = Clock::now() + options_.port_poll_interval;
    Apply(PollPortStates(tracker_));
  }
}

void DeviceWatch::Stop() {
  uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof(one)) < 0) {
    // The counter cannot overflow from one write per Stop: nothing to do.
  }
}

void DeviceWatch::RequestRescan() {
  uint64_t one = 1;
  if (::write(rescan_fd_, &one, sizeof(one)) < 0) {
    // EAGAIN only when the counter is full: a rescan is already asked for.
  }
}

Status DeviceWatch::Run() {
  const std::vector<int> sources = fds();
  while (true) {
    if (hooks_.on_wakeup) hooks_.on_wakeup();
    std::vector<pollfd> fds{{stop_fd_, POLLIN, 0}, {rescan_fd_, POLLIN, 0}};
    for (int fd : sources) fds.push_back({fd, POLLIN, 0});
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(NextWakeup() - Clock::now());
    int timeout = static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 3600 * 1000));
    int r = ::poll(fds.data(), fds.size(), timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "poll");
    }
    if (fds[0].revents) return Status::Ok();
    // The timers first, whether or not an event came too: a steady stream of events must not
    // starve the rescan or the port poll.
    uint64_t asked = 0;
    if (fds[1].revents && ::read(rescan_fd_, &asked, sizeof(asked)) == sizeof(asked)) {
      Rescan();
    } else {
      OnTimer(Clock::now());
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents) HandleReadable(fds[i].fd);
    }
  }
}

}  // namespace rdmak8s::node
