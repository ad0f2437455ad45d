// HttpServer: the small HTTP/1.1 server behind /metrics and the probes. One thread, one epoll:
// every connection costs a buffer, not a thread, so connections that send nothing (or half a
// request) cannot keep a probe from being answered; each gets `request_timeout` in all to send
// its request and take the answer, and when `max_connections` are open the oldest is dropped
// for a new one. One request per connection ("Connection: close"); GET and HEAD only.
//
// Stop() wakes the thread at once (an eventfd), closes every connection and joins: shutting
// down never waits for a client or a poll interval.
//
// Thread safety: Listen/Stop/port from one thread; the handler runs on the server's thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "rdmak8s/status.h"

namespace rdmak8s::dp {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  struct Options {
    std::chrono::milliseconds request_timeout{5000};
    int max_connections = 64;
  };
  // `handler` answers a GET (or HEAD) of `path` (without the query string), unknown paths
  // included (its 404).
  using Handler = std::function<HttpResponse(const std::string& path)>;

  HttpServer(Options options, Handler handler);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds "host:port" ("0.0.0.0:9470", "[::]:9470", "127.0.0.1:0" picks a port) with
  // SO_REUSEADDR, listens and starts the thread. kInvalidArgument for a malformed address,
  // else the socket call that failed and its errno ("bind: Address already in use").
  Status Listen(const std::string& address);
  // The bound port (0 before Listen).
  int port() const { return port_; }
  // Idempotent.
  void Stop();

 private:
  void Loop();

  Options options_;
  Handler handler_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace rdmak8s::dp
