// What both agents serve on their metrics address: /metrics (the agent's scrape, computed on the
// HTTP server's worker, shared for kScrapeFreshFor, its pages given back after each), /livez,
// and /readyz with its older alias /healthz (answered from memory on the server's loop), on one
// HttpServer (http_server.h) with the same bounds for both. The agent supplies the three
// answers; this room decides the paths, the bounds and the server's lifetime, once.
//
// Thread safety: Serve may run on a retry thread (listen_retry.h) while the agent's main thread
// asks port() or stats(); every method takes the server's lock. The answers run on the server's
// threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "node/http_server.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::node {

// How long one scrape is served to every scraper as it is: Prometheus scrapes every 15 to 60 s,
// and several scrapers (an HA pair, a curl loop) within this share one read of the counters.
inline constexpr std::chrono::milliseconds kScrapeFreshFor{2000};

class AgentHttp {
 public:
  struct Answers {
    std::function<std::string()> not_live;  // "" when live, else why (503 on /livez)
    std::function<std::string()> unready;   // "" when ready, else why (503 on /readyz, /healthz)
    std::function<std::string()> scrape;    // the Prometheus text of /metrics
  };
  explicit AgentHttp(Answers answers) : answers_(std::move(answers)) {}
  ~AgentHttp() { Stop(); }
  AgentHttp(const AgentHttp&) = delete;
  AgentHttp& operator=(const AgentHttp&) = delete;

  // Listens on `address` ("host:port", "[::1]:port"; port 0 picks one). Errors keep the bind's
  // errno (ListenRetry tells a taken address by it) and say "metrics listen on <address>: ...";
  // FailedPrecondition when already serving.
  Status Serve(const std::string& address);
  void Stop();
  int port() const;  // 0 before Serve
  HttpServer::Stats stats() const;

 private:
  const Answers answers_;
  mutable std::mutex mu_;
  std::unique_ptr<HttpServer> server_;  // guarded by mu_
};

}  // namespace rdmak8s::node
