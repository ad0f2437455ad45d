// CurlKubeClient::Stream (kube_client.h): a watch's long answer read line by line as it arrives,
// on a libcurl handle of its own for as long as the watch lasts (never Send's pooled handles),
// ended by the server, the caller (on_line, cancelled) or StopRetries.

#include <algorithm>
#include <array>

#include <curl/curl.h>

#include "dra/api/kube_client.h"
#include "dra/api/kube_request.h"

namespace rdmak8s::dra {

StatusOr<HttpResponse> KubeApi::Stream(const HttpRequest& request,
                                       const std::function<bool(std::string_view)>&,
                                       const std::function<bool()>&) {
  return UnimplementedError(request.method + " " + server() + request.path + ": streaming not supported");
}

namespace {

struct StreamState {
  CURL* curl = nullptr;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  const std::function<bool()>* cancelled = nullptr;
  const std::function<bool()>* stopping = nullptr;
  long status = 0;  // once the first byte of the body came
  std::string pending;  // a line not ended yet
  std::string error_body;  // the body of a non-200 answer
  bool ended_by_caller = false;
};

size_t StreamBody(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<StreamState*>(user);
  const size_t len = size * n;
  if (st->status == 0) curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &st->status);
  if (st->status != 200) {
    if (st->error_body.size() < 64 * 1024) st->error_body.append(data, std::min<size_t>(len, 64 * 1024));
    return len;
  }
  st->pending.append(data, len);
  size_t start = 0;
  for (size_t nl = st->pending.find('\n'); nl != std::string::npos; nl = st->pending.find('\n', start)) {
    std::string_view line(st->pending.data() + start, nl - start);
    start = nl + 1;
    if (!line.empty() && !(*st->on_line)(line)) {
      st->ended_by_caller = true;
      return 0;  // curl ends the transfer (CURLE_WRITE_ERROR)
    }
  }
  st->pending.erase(0, start);
  // One event is at most an object: a line that never ends is not a watch.
  if (st->pending.size() > 16 * 1024 * 1024) return 0;
  return len;
}

int StreamProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<StreamState*>(user);
  if ((*st->cancelled)() || (*st->stopping)()) {
    st->ended_by_caller = true;
    return 1;  // abort
  }
  return 0;
}

}  // namespace

StatusOr<HttpResponse> CurlKubeClient::Stream(const HttpRequest& request,
                                              const std::function<bool(std::string_view)>& on_line,
                                              const std::function<bool()>& cancelled) {
  const std::string url = internal::Url(config_.server, request);
  const std::string what = request.method + " " + url;
  RDMAK8S_ASSIGN_OR_RETURN(const std::string token, internal::BearerToken(config_));
  std::unique_ptr<CURL, void (*)(CURL*)> handle(curl_easy_init(), curl_easy_cleanup);
  if (!handle) return InternalError(what + ": curl_easy_init failed");
  CURL* curl = handle.get();
  std::function<bool()> stopping = [this] {
    std::lock_guard<std::mutex> stop(stop_mu_);
    return stopping_;
  };
  StreamState st;
  st.curl = curl;
  st.on_line = &on_line;
  st.cancelled = &cancelled;
  st.stopping = &stopping;
  std::array<char, CURL_ERROR_SIZE> errbuf{};
  const internal::HeaderList headers = internal::RequestHeaders(request, token);
  internal::SetRequestOptions(curl, url, request, headers.get(), errbuf.data(), config_);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
  // No overall timeout: the request's timeoutSeconds ends a watch; keepalive finds a dead peer.
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, StreamBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, StreamProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &st);

  CURLcode rc = curl_easy_perform(curl);
  HttpResponse response;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  if (rc != CURLE_OK && !st.ended_by_caller) {
    StatusOr<HttpResponse> failed = internal::CurlFailure(what, rc, errbuf.data());
    Observe("WATCH", failed);
    return failed;
  }
  if (response.status != 200) response.body = std::move(st.error_body);
  Observe("WATCH", response);
  return response;
}

}  // namespace rdmak8s::dra
