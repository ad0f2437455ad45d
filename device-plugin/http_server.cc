#include "device-plugin/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <map>
#include <vector>

namespace rdmak8s::dp {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxRequestBytes = 16 * 1024;

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string Render(const HttpResponse& r, bool head) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
  if (!head) out += r.body;
  return out;
}

HttpResponse Plain(int status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
}

struct Conn {
  std::string in;
  std::string out;
  size_t written = 0;
  bool responding = false;
  Clock::time_point deadline;
};

}  // namespace

HttpServer::HttpServer(Options options, Handler handler)
    : options_(options), handler_(std::move(handler)) {}

HttpServer::~HttpServer() { Stop(); }

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
  if (wake_fd_ < 0) {
    int err = errno;
    close(fd);
    return ErrnoError(err, "eventfd");
  }
  listen_fd_ = fd;
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void HttpServer::Loop() {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return;
  auto watch = [&](int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(ep, op, fd, &ev) == 0;
  };
  watch(listen_fd_, EPOLLIN, EPOLL_CTL_ADD);
  watch(wake_fd_, EPOLLIN, EPOLL_CTL_ADD);
  std::map<int, Conn> conns;
  auto drop = [&](int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(fd);
  };
  // Writes what is pending; true when the connection is finished (all sent, or broken).
  auto flush = [&](int fd, Conn& c) {
    while (c.written < c.out.size()) {
      ssize_t n = send(fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
      if (n > 0) {
        c.written += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
      if (n < 0 && errno == EINTR) continue;
      return true;
    }
    return true;
  };
  auto respond = [&](int fd, Conn& c, const HttpResponse& r, bool head) {
    c.out = Render(r, head);
    c.responding = true;
    if (flush(fd, c)) {
      drop(fd);
    } else {
      watch(fd, EPOLLOUT, EPOLL_CTL_MOD);
    }
  };
  // A complete header block is in c.in: answer it.
  auto handle = [&](int fd, Conn& c) {
    size_t eol = c.in.find("\r\n");
    std::string line = c.in.substr(0, eol);
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) {
      respond(fd, c, Plain(400, "bad request line\n"), false);
      return;
    }
    std::string method = line.substr(0, sp1);
    std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    target = target.substr(0, target.find('?'));
    bool head = method == "HEAD";
    if (method != "GET" && !head) {
      respond(fd, c, Plain(405, "GET only\n"), false);
      return;
    }
    respond(fd, c, handler_(target), head);
  };

  epoll_event evs[32];
  while (true) {
    int timeout = -1;
    auto now = Clock::now();
    for (const auto& [fd, c] : conns) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count() + 1;
      timeout = timeout < 0 ? static_cast<int>(std::max<int64_t>(ms, 0))
                            : std::min(timeout, static_cast<int>(std::max<int64_t>(ms, 0)));
    }
    int n = epoll_wait(ep, evs, 32, timeout);
    if (n < 0 && errno != EINTR) break;
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      int fd = evs[i].data.fd;
      if (fd == wake_fd_) {
        stop = true;
      } else if (fd == listen_fd_) {
        while (true) {
          int c = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          if (static_cast<int>(conns.size()) >= options_.max_connections) {
            // Full: the oldest connection goes (a probe is newer than whatever hogs the slots).
            auto oldest = conns.begin();
            for (auto it = conns.begin(); it != conns.end(); ++it) {
              if (it->second.deadline < oldest->second.deadline) oldest = it;
            }
            drop(oldest->first);
          }
          conns[c].deadline = Clock::now() + options_.request_timeout;
          watch(c, EPOLLIN, EPOLL_CTL_ADD);
        }
      } else {
        auto it = conns.find(fd);
        if (it == conns.end()) continue;
        Conn& c = it->second;
        if (c.responding) {
          if (flush(fd, c)) drop(fd);
          continue;
        }
        char buf[4096];
        bool closed = false;
        while (true) {
          ssize_t r = read(fd, buf, sizeof(buf));
          if (r > 0) {
            c.in.append(buf, static_cast<size_t>(r));
            if (c.in.size() > kMaxRequestBytes) break;
            continue;
          }
          if (r < 0 && errno == EINTR) continue;
          closed = r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
          break;
        }
        if (c.in.find("\r\n\r\n") != std::string::npos) {
          handle(fd, c);
        } else if (c.in.size() > kMaxRequestBytes) {
          respond(fd, c, Plain(431, "request too large\n"), false);
        } else if (closed) {
          drop(fd);
        }
      }
    }
    if (stop) break;
    now = Clock::now();
    std::vector<int> expired;
    for (const auto& [fd, c] : conns) {
      if (c.deadline <= now) expired.push_back(fd);
    }
    for (int fd : expired) drop(fd);
  }
  for (auto& [fd, c] : conns) close(fd);
  close(ep);
}

}  // namespace rdmak8s::dp
