#include "node/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include <spdlog/spdlog.h>

namespace rdmak8s::node {

namespace {

using Clock = std::chrono::steady_clock;

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string Head(int status, const std::string& content_type, size_t length) {
  return "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
         "\r\nContent-Type: " + content_type + "\r\nContent-Length: " + std::to_string(length) +
         "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
}

HttpResponse Plain(int status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
}

struct Conn {
  std::string in;
  std::string head;                          // status line and headers
  std::shared_ptr<const std::string> body;   // shared by every answer of one computation
  size_t written = 0;                        // of head + body
  bool responding = false;
  bool waiting = false;                      // for the cached route's computation
  bool head_only = false;
  Clock::time_point deadline;
};

void Wake(int fd) {
  uint64_t one = 1;
  (void)!write(fd, &one, sizeof(one));
}

void Drain(int fd) {
  uint64_t v = 0;
  while (read(fd, &v, sizeof(v)) > 0) {
  }
}

}  // namespace

HttpServer::HttpServer(Options options, Handler handler, std::optional<CachedRoute> cached)
    : options_(options), handler_(std::move(handler)), cached_(std::move(cached)) {}

HttpServer::~HttpServer() { Stop(); }

HttpServer::Stats HttpServer::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

Status HttpServer::Listen(const std::string& address) {
  if (listen_fd_ >= 0) return FailedPreconditionError("already listening");
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("want host:port");
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.empty()) return InvalidArgumentError("want host:port");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | AI_NUMERICHOST;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return InvalidArgumentError(std::string("address: ") + gai_strerror(rc));
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int err = errno;
    freeaddrinfo(res);
    return ErrnoError(err, "socket");
  }
  // A restart right after exit binds although the old process's connections sit in TIME_WAIT.
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  Status failed;
  if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    failed = ErrnoError(errno, "bind");
  } else if (listen(fd, 128) != 0) {
    failed = ErrnoError(errno, "listen");
  }
  freeaddrinfo(res);
  if (!failed.ok()) {
    close(fd);
    return failed;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    if (bound.ss_family == AF_INET) {
      port_ = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else if (bound.ss_family == AF_INET6) {
      port_ = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    }
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  done_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0 || done_fd_ < 0) {
    int err = errno;
    close(fd);
    for (int* e : {&wake_fd_, &done_fd_}) {
      if (*e >= 0) close(*e);
      *e = -1;
    }
    return ErrnoError(err, "eventfd");
  }
  listen_fd_ = fd;
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    work_stop_ = false;
  }
  if (cached_) worker_ = std::thread([this] { Work(); });
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (thread_.joinable()) {
    Wake(wake_fd_);
    thread_.join();
  }
  if (worker_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(work_mu_);
      work_stop_ = true;
    }
    work_cv_.notify_all();
    worker_.join();
  }
  for (int* fd : {&listen_fd_, &wake_fd_, &done_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void HttpServer::Work() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait(lock, [this] { return work_wanted_ || work_stop_; });
      if (work_stop_) return;
      work_wanted_ = false;
    }
    std::shared_ptr<const std::string> result;
    try {
      result = std::make_shared<const std::string>(cached_->compute());
    } catch (const std::exception& e) {
      SPDLOG_ERROR("{}: {}", cached_->path, e.what());
    }
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.computations;
    }
    {
      std::lock_guard<std::mutex> lock(work_mu_);
      work_result_ = std::move(result);
      work_done_ = true;
    }
    Wake(done_fd_);
  }
}

// The loop thread's state and its steps: the open connections, the cached route's last result,
// and what each kind of event does to them. Lives on the loop thread only (Loop() makes it);
// stats_ and the worker hand-over are the server's, under their own locks.
class HttpServer::Connections {
 public:
  Connections(HttpServer& server, int ep) : s_(server), ep_(ep) {}
  ~Connections() {
    for (auto& [fd, c] : conns_) close(fd);
    conns_.clear();
    NoteOpen();
  }
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  bool Watch(int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(ep_, op, fd, &ev) == 0;
  }

  // epoll_wait's timeout: until the nearest connection deadline, or -1 when none is open.
  int NextTimeoutMs() const {
    int timeout = -1;
    const auto now = Clock::now();
    for (const auto& [fd, c] : conns_) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count() + 1;
      int left = static_cast<int>(std::max<int64_t>(ms, 0));
      timeout = timeout < 0 ? left : std::min(timeout, left);
    }
    return timeout;
  }

  // The listening socket is readable. At most a table's worth per wakeup: the rest wait in the
  // backlog, and what this round accepted is not dropped by this round's later arrivals before
  // its request was read.
  void Accept() {
    for (int k = 0; k < s_.options_.max_connections; ++k) {
      int a = accept4(s_.listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (a < 0) break;
      {
        std::lock_guard<std::mutex> lock(s_.stats_mu_);
        ++s_.stats_.accepted;
      }
      if (static_cast<int>(conns_.size()) >= s_.options_.max_connections) DropOldest();
      if (s_.options_.send_buffer_bytes > 0) {
        setsockopt(a, SOL_SOCKET, SO_SNDBUF, &s_.options_.send_buffer_bytes,
                   sizeof(s_.options_.send_buffer_bytes));
      }
      Conn& c = conns_[a];
      c.deadline = Clock::now() + s_.options_.request_timeout;
      Watch(a, EPOLLIN, EPOLL_CTL_ADD);
      NoteOpen();
      // A probe's request is usually in the socket already: answer it now.
      Readable(a, c);
    }
  }

  // A connection's event: more to send, the client gone while it waits, or more to read.
  void Event(int fd, uint32_t events) {
    auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (c.responding) {
      if (Flush(fd, c)) Drop(fd);
    } else if (c.waiting) {
      if ((events & (EPOLLHUP | EPOLLERR)) != 0) Drop(fd);
    } else {
      Readable(fd, c);
    }
  }

  // The worker finished a computation: cache it and answer everyone who waited for it.
  void Computed() {
    Drain(s_.done_fd_);
    std::shared_ptr<const std::string> result;
    {
      std::lock_guard<std::mutex> lock(s_.work_mu_);
      if (!s_.work_done_) return;
      s_.work_done_ = false;
      result = std::move(s_.work_result_);
    }
    computing_ = false;
    if (result) {
      cache_ = result;
      fresh_until_ = Clock::now() + s_.cached_->fresh_for;
    }
    std::vector<int> waiting;
    for (const auto& [fd, c] : conns_) {
      if (c.waiting) waiting.push_back(fd);
    }
    for (int fd : waiting) {
      Conn& c = conns_.at(fd);
      if (result) {
        RespondShared(fd, c, 200, s_.cached_->content_type, result);
      } else {
        Respond(fd, c, Plain(500, "computing " + s_.cached_->path + " failed (see the log)\n"));
      }
    }
  }

  // Every connection past its request_timeout goes (half a request, a slow reader).
  void DropExpired() {
    const auto now = Clock::now();
    std::vector<int> expired;
    for (const auto& [fd, c] : conns_) {
      if (c.deadline <= now) expired.push_back(fd);
    }
    for (int fd : expired) Drop(fd);
    {
      std::lock_guard<std::mutex> lock(s_.stats_mu_);
      s_.stats_.dropped_at_timeout += expired.size();
    }
    NoteOpen();
  }

 private:
  void NoteOpen() {
    std::lock_guard<std::mutex> lock(s_.stats_mu_);
    s_.stats_.open_connections = static_cast<int>(conns_.size());
    s_.stats_.max_open_connections = std::max(s_.stats_.max_open_connections, s_.stats_.open_connections);
  }

  void Drop(int fd) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns_.erase(fd);
  }

  // Full: the oldest connection goes (a probe is newer than whatever hogs the slots).
  void DropOldest() {
    auto oldest = conns_.begin();
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
      if (it->second.deadline < oldest->second.deadline) oldest = it;
    }
    Drop(oldest->first);
    std::lock_guard<std::mutex> lock(s_.stats_mu_);
    ++s_.stats_.dropped_when_full;
  }

  // Writes what is pending; true when the connection is finished (all sent, or broken).
  static bool Flush(int fd, Conn& c) {
    const size_t body_size = c.body && !c.head_only ? c.body->size() : 0;
    while (c.written < c.head.size() + body_size) {
      std::array<iovec, 2> iov{};
      int n_iov = 0;
      if (c.written < c.head.size()) {
        iov[n_iov++] = {const_cast<char*>(c.head.data()) + c.written, c.head.size() - c.written};
      }
      size_t body_at = c.written > c.head.size() ? c.written - c.head.size() : 0;
      if (body_size > body_at) {
        iov[n_iov++] = {const_cast<char*>(c.body->data()) + body_at, body_size - body_at};
      }
      msghdr msg{};
      msg.msg_iov = iov.data();
      msg.msg_iovlen = static_cast<size_t>(n_iov);
      ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
      if (n > 0) {
        c.written += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
      if (n < 0 && errno == EINTR) continue;
      return true;
    }
    return true;
  }

  void RespondShared(int fd, Conn& c, int status, const std::string& content_type,
                     std::shared_ptr<const std::string> body) {
    c.head = Head(status, content_type, body ? body->size() : 0);
    c.body = std::move(body);
    c.responding = true;
    c.waiting = false;
    if (Flush(fd, c)) {
      Drop(fd);
    } else {
      Watch(fd, EPOLLOUT, EPOLL_CTL_MOD);
    }
  }

  void Respond(int fd, Conn& c, HttpResponse r) {
    RespondShared(fd, c, r.status, r.content_type, std::make_shared<const std::string>(std::move(r.body)));
  }

  // A complete header block is in c.in: answer it (or wait for the computation).
  void Handle(int fd, Conn& c) {
    size_t eol = c.in.find("\r\n");
    std::string line = c.in.substr(0, eol);
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) {
      Respond(fd, c, Plain(400, "bad request line\n"));
      return;
    }
    std::string method = line.substr(0, sp1);
    std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    target = target.substr(0, target.find('?'));
    if (method != "GET" && method != "HEAD") {
      Respond(fd, c, Plain(405, "GET only\n"));
      return;
    }
    c.head_only = method == "HEAD";
    c.in.clear();
    c.in.shrink_to_fit();
    if (!s_.cached_ || target != s_.cached_->path) {
      Respond(fd, c, s_.handler_(target));
      return;
    }
    if (cache_ && Clock::now() < fresh_until_) {
      {
        std::lock_guard<std::mutex> lock(s_.stats_mu_);
        ++s_.stats_.served_from_cache;
      }
      RespondShared(fd, c, 200, s_.cached_->content_type, cache_);
      return;
    }
    // Nothing more to read from this client; EPOLLHUP/EPOLLERR still come.
    c.waiting = true;
    Watch(fd, 0, EPOLL_CTL_MOD);
    if (!computing_) {
      computing_ = true;
      {
        std::lock_guard<std::mutex> lock(s_.work_mu_);
        s_.work_wanted_ = true;
      }
      s_.work_cv_.notify_one();
    }
  }

  void Readable(int fd, Conn& c) {
    std::array<char, 4096> buf{};
    bool closed = false;
    while (true) {
      ssize_t r = read(fd, buf.data(), buf.size());
      if (r > 0) {
        c.in.append(buf.data(), static_cast<size_t>(r));
        if (c.in.size() > s_.options_.max_request_bytes) break;
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      closed = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      break;
    }
    if (c.in.find("\r\n\r\n") != std::string::npos) {
      Handle(fd, c);
    } else if (c.in.size() > s_.options_.max_request_bytes) {
      Respond(fd, c, Plain(431, "request too large\n"));
    } else if (closed) {
      Drop(fd);
    }
  }

  HttpServer& s_;
  const int ep_;
  std::map<int, Conn> conns_;
  // The cached route: its last result, until when it is served as is, and whether the worker
  // is computing the next one.
  std::shared_ptr<const std::string> cache_;
  Clock::time_point fresh_until_{};
  bool computing_ = false;
};

void HttpServer::Loop() {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    SPDLOG_ERROR("http server: epoll_create1: {}", std::strerror(errno));
    return;
  }
  {
    Connections conns(*this, ep);
    conns.Watch(listen_fd_, EPOLLIN, EPOLL_CTL_ADD);
    conns.Watch(wake_fd_, EPOLLIN, EPOLL_CTL_ADD);
    conns.Watch(done_fd_, EPOLLIN, EPOLL_CTL_ADD);
    std::array<epoll_event, 32> evs{};
    bool stop = false;
    while (!stop) {
      int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), conns.NextTimeoutMs());
      if (n < 0 && errno != EINTR) {
        SPDLOG_ERROR("http server: epoll_wait: {}", std::strerror(errno));
        break;
      }
      for (int i = 0; i < n; ++i) {
        const int fd = evs[i].data.fd;
        if (fd == wake_fd_) {
          stop = true;
        } else if (fd == done_fd_) {
          conns.Computed();
        } else if (fd == listen_fd_) {
          conns.Accept();
        } else {
          conns.Event(fd, evs[i].events);
        }
      }
      if (!stop) conns.DropExpired();
    }
  }  // every connection closed
  close(ep);
}

}  // namespace rdmak8s::node
