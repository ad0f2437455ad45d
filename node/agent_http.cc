#include "node/agent_http.h"

#include <malloc.h>

#include "node/probes.h"

namespace rdmak8s::node {

Status AgentHttp::Serve(const std::string& address) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (server_ != nullptr) return FailedPreconditionError("metrics: already serving");
  }
  HttpServer::Options options;
  options.request_timeout = std::chrono::milliseconds(5000);
  options.max_connections = 64;
  HttpServer::CachedRoute scrape{"/metrics", "text/plain; version=0.0.4; charset=utf-8",
                                 kScrapeFreshFor, [this] {
                                   std::string text = answers_.scrape();
                                   // A scrape of 1,024 devices builds tens of MB of metric
                                   // families and frees them: give those pages back, or the
                                   // worker's arena keeps them resident after every scrape.
                                   malloc_trim(0);
                                   return text;
                                 }};
  auto server = std::make_unique<HttpServer>(
      options,
      [this](const std::string& path) {
        if (path == "/livez") return ProbeResponse(answers_.not_live());
        if (path == "/readyz" || path == "/healthz") return ProbeResponse(answers_.unready());
        return NotFoundResponse();
      },
      std::move(scrape));
  Status s = server->Listen(address);
  if (!s.ok()) return s.Prepend("metrics listen on " + address);
  std::lock_guard<std::mutex> lock(mu_);
  server_ = std::move(server);
  return Status::Ok();
}

void AgentHttp::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (server_) server_->Stop();
}

int AgentHttp::port() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_ ? server_->port() : 0;
}

HttpServer::Stats AgentHttp::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_ ? server_->stats() : HttpServer::Stats{};
}

}  // namespace rdmak8s::node
