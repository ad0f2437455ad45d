// HttpServer: the small HTTP/1.1 server behind /metrics and the probes, open to whoever reaches
// the port (no authentication), so what any client does must not delay a probe nor grow memory
// without bound.
//
// One thread runs an epoll loop that never blocks: every connection costs a buffer, not a
// thread, and the fast routes (the handler: the probes) are answered inline from memory. The
// one costly route (CachedRoute: /metrics, which reads every counter file) is never computed on
// that loop: a worker thread computes it, at most one computation at a time, and its result is
// shared by every request that waited for it and reused by those that come within `fresh_for`
// after it (single flight plus a short cache). So N looping scrapers cost one computation per
// `fresh_for` at most, and a probe never queues behind a scrape.
//
// Bounds, whatever the clients do:
//   - at most `max_connections` open; one more arriving drops the oldest (a probe is newer than
//     whatever hogs the slots; a request already in the socket at accept is answered at once);
//   - `request_timeout` in all per connection, from accept to the last byte taken: a client that
//     sends half a request, or does not read its answer (a slow reader), is dropped then;
//   - a request's header block is at most `max_request_bytes` (431 beyond);
//   - an answer of the cached route is one shared buffer (connections hold a reference, not a
//     copy), and each socket's kernel send buffer is capped (`send_buffer_bytes`).
// One request per connection ("Connection: close"); GET and HEAD only.
//
// Stop() wakes the thread at once (an eventfd), closes every connection and joins both threads:
// shutting down waits for no client, only for a computation already running.
//
// Thread safety: Listen/Stop/port from one thread; stats() from any; the handler runs on the
// server's loop thread, the cached route's compute on its worker thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

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
    size_t max_request_bytes = 16 * 1024;
    // SO_SNDBUF of each accepted socket (the kernel doubles it); 0 keeps the system's. Socket
    // buffers are charged to the container's memory cgroup.
    int send_buffer_bytes = 128 * 1024;
  };
  // Answers a GET (or HEAD) of `path` (without the query string), unknown paths included (its
  // 404), on the loop thread: it must not block.
  using Handler = std::function<HttpResponse(const std::string& path)>;
  // The costly route: `compute` runs on the worker thread (200 with `content_type`).
  struct CachedRoute {
    std::string path;
    std::string content_type;
    std::chrono::milliseconds fresh_for{2000};
    std::function<std::string()> compute;
  };

  HttpServer(Options options, Handler handler, std::optional<CachedRoute> cached = std::nullopt);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds "host:port" ("0.0.0.0:9470", "[::]:9470", "127.0.0.1:0" picks a port) with
  // SO_REUSEADDR, listens and starts the threads. kInvalidArgument for a malformed address,
  // else the socket call that failed and its errno ("bind: Address already in use").
  Status Listen(const std::string& address);
  // The bound port (0 before Listen).
  int port() const { return port_; }
  // Idempotent.
  void Stop();

  // What the server has done so far (for tests, the bench and logs).
  struct Stats {
    int open_connections = 0;
    int max_open_connections = 0;      // the most ever open at once
    uint64_t accepted = 0;
    uint64_t dropped_when_full = 0;    // oldest connection dropped for a new one
    uint64_t dropped_at_timeout = 0;   // request_timeout passed (half a request, slow reader)
    uint64_t computations = 0;         // runs of the cached route's compute
    uint64_t served_from_cache = 0;    // cached-route answers that started no computation
  };
  Stats stats() const;

 private:
  class Connections;  // the loop thread's state and steps (http_server.cc)
  void Loop();
  void Work();

  Options options_;
  Handler handler_;
  std::optional<CachedRoute> cached_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // Stop() -> loop
  int done_fd_ = -1;  // worker -> loop: a computation finished
  int port_ = 0;
  std::thread thread_;
  std::thread worker_;

  // Loop <-> worker.
  std::mutex work_mu_;
  std::condition_variable work_cv_;
  bool work_wanted_ = false;
  bool work_stop_ = false;
  bool work_done_ = false;                          // a result (or a failure) to take
  std::shared_ptr<const std::string> work_result_;  // null: the computation failed

  mutable std::mutex stats_mu_;
  Stats stats_;
};

}  // namespace rdmak8s::node
