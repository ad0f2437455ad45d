#include "dra/api/kube_client.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <thread>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "rdmak8s/file_util.h"
#include "rdmak8s/json_reader.h"
#include "rdmak8s/numbers.h"

namespace rdmak8s::dra {
namespace {

// What the libcurl callbacks fill in. A callback that returns less than it was given makes
// libcurl end the request (CURLE_WRITE_ERROR); `refused` then says why.
struct Reception {
  HttpResponse* response;
  size_t max_body;
  std::string refused;
};

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<Reception*>(user);
  const size_t len = size * n;
  if (r->response->body.size() + len > r->max_body) {
    r->refused = "answer larger than the " + std::to_string(r->max_body) +
                 " bytes this answer may have (kMaxResponseBytes, kMaxObjectBytes): not read";
    return 0;
  }
  try {
    r->response->body.append(data, len);
  } catch (const std::exception& e) {  // no exception may unwind through libcurl
    r->refused = std::string("keep the answer: ") + e.what();
    return 0;
  }
  return len;
}

size_t WriteHeader(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<Reception*>(user);
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  constexpr size_t kMaxRetryAfter = 64;  // an integer or an HTTP date
  if (line.size() > kName.size() && line.size() <= kName.size() + kMaxRetryAfter) {
    std::string lower(line.substr(0, kName.size()));
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == kName) {
      std::string_view v = line.substr(kName.size());
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
      r->response->retry_after = std::string(v);
    }
  }
  return size * n;
}

// A service-account token is a few KiB; the projected volume's file is a link into ..data/.
constexpr size_t kMaxTokenBytes = 64 * 1024;

StatusOr<std::string> ReadToken(const std::string& path) {
  StatusOr<std::string> text = ReadRegularFile(path, kMaxTokenBytes, FileLinks::kFollow);
  if (!text.ok()) return text.status().Prepend("read token " + path);
  std::string token = std::move(*text);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) return InvalidArgumentError("read token " + path + ": empty");
  return token;
}

bool Retryable(long status) {
  return status == kHttpTooManyRequests || status == 500 || status == 502 || status == 503 || status == 504;
}

// Retry-After in seconds (the API server sends integers), at most `cap`; nullopt when absent
// or a date. Clamped before it is scaled: a huge value must not overflow into a short wait.
std::optional<std::chrono::milliseconds> RetryAfter(const std::string& v, std::chrono::milliseconds cap) {
  StatusOr<uint64_t> secs = ParseUnsigned<uint64_t>(v, "Retry-After");
  if (!secs.ok()) {
    // All digits yet no uint64_t: a huge number of seconds, which is a long wait, not a date.
    const bool digits =
        !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
    return digits ? std::optional(cap) : std::nullopt;
  }
  if (*secs > static_cast<uint64_t>(cap.count() / 1000)) return cap;
  return std::chrono::milliseconds(static_cast<int64_t>(*secs) * 1000);
}

std::string Url(const std::string& server, const HttpRequest& r) { return server + r.path; }

// The transport and TLS settings of every request, one-shot or streamed: the unix socket (tests),
// the server verified against our CA unless the kubeconfig opted out, the client certificate.
// The blobs are CURL_BLOB_COPY: libcurl keeps its own copy, so they may go out of scope here.
void SetTransport(CURL* curl, const KubeConfig& config) {
  if (!config.unix_socket.empty()) curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, config.unix_socket.c_str());
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, config.insecure_skip_tls_verify ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, config.insecure_skip_tls_verify ? 0L : 2L);
  if (!config.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, config.ca_file.c_str());
  curl_blob ca_blob{const_cast<char*>(config.ca_pem.data()), config.ca_pem.size(), CURL_BLOB_COPY};
  if (!config.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca_blob);
  if (!config.client_cert_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERT, config.client_cert_file.c_str());
  if (!config.client_key_file.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEY, config.client_key_file.c_str());
  curl_blob cert_blob{const_cast<char*>(config.client_cert_pem.data()), config.client_cert_pem.size(), CURL_BLOB_COPY};
  curl_blob key_blob{const_cast<char*>(config.client_key_pem.data()), config.client_key_pem.size(), CURL_BLOB_COPY};
  if (!config.client_cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert_blob);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!config.client_key_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key_blob);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

}  // namespace

std::string QueryValue(std::string_view value) {
  // libcurl's escaping (a null handle is allowed since 7.82): everything but RFC 3986's
  // unreserved characters is %XX.
  char* escaped = curl_easy_escape(nullptr, value.data(), static_cast<int>(value.size()));
  if (escaped == nullptr) return std::string();  // out of memory: nothing a caller could send
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

std::string PathSegment(std::string_view segment) {
  // "." and ".." as a whole would be dot segments, which a server resolves: encoded.
  if (segment == ".") return "%2E";
  if (segment == "..") return "%2E%2E";
  return QueryValue(segment);
}

Status ApiError(const KubeApi& api, const HttpRequest& request, const HttpResponse& response) {
  std::string message;
  // Only the Status's message is built of an answer that may be kMaxResponseBytes.
  static const json_reader::KeepOnly kMessage({"message"});
  if (StatusOr<nlohmann::json> j = json_reader::Parse(response.body, "answer", &kMessage); j.ok() && j->is_object()) {
    StatusOr<std::string> m = json_reader::StringAt(*j, "$", "message");
    if (m.ok()) message = *m;
  }
  if (message.empty()) message = response.body.substr(0, 200);
  std::string text = request.method + " " + Url(api.server(), request) + ": HTTP " +
                     std::to_string(response.status) + (message.empty() ? "" : ": " + message);
  switch (response.status) {
    case kHttpNotFound: return NotFoundError(text);
    case kHttpConflict: return AlreadyExistsError(text);
    case kHttpGone: return FailedPreconditionError(text);
    case 401:
    case 403: return PermissionDeniedError(text);
    default: break;
  }
  if (Retryable(response.status)) return UnavailableError(text);
  return InternalError(text);
}

StatusOr<std::unique_ptr<CurlKubeClient>> CurlKubeClient::Create(KubeConfig config, RetryPolicy retry,
                                                                 size_t max_response_bytes) {
  if (config.server.empty()) return InvalidArgumentError("kube client: no server");
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (global != CURLE_OK) return InternalError(std::string("curl_global_init: ") + curl_easy_strerror(global));
  CURL* curl = curl_easy_init();
  if (!curl) return InternalError("curl_easy_init failed");
  return std::unique_ptr<CurlKubeClient>(new CurlKubeClient(std::move(config), std::move(retry), max_response_bytes, curl));
}

CurlKubeClient::CurlKubeClient(KubeConfig config, RetryPolicy retry, size_t max_response_bytes, void* curl)
    : config_(std::move(config)), retry_(std::move(retry)), max_response_bytes_(max_response_bytes), idle_{curl} {}

CurlKubeClient::~CurlKubeClient() {
  for (void* curl : idle_) curl_easy_cleanup(static_cast<CURL*>(curl));
}

void* CurlKubeClient::TakeHandle() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      void* curl = idle_.back();
      idle_.pop_back();
      return curl;
    }
  }
  return curl_easy_init();
}

void CurlKubeClient::ReturnHandle(void* curl) {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (idle_.size() < kMaxIdleHandles) {
      idle_.push_back(curl);
      return;
    }
  }
  curl_easy_cleanup(static_cast<CURL*>(curl));
}

StatusOr<HttpResponse> CurlKubeClient::SendOnce(void* handle, const HttpRequest& request) {
  CURL* curl = static_cast<CURL*>(handle);
  const std::string url = Url(config_.server, request);
  const std::string what = request.method + " " + url;
  std::string token = config_.token;
  if (!config_.token_file.empty()) {
    RDMAK8S_ASSIGN_OR_RETURN(token, ReadToken(config_.token_file));
  }

  // This attempt's time: what is left before the request's deadline, at most kRequestTimeout.
  auto timeout = kRequestTimeout;
  if (request.deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *request.deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds(0)) return DeadlineExceededError(what + ": deadline passed before it was sent");
    timeout = std::min(timeout, left);
  }

  curl_easy_reset(curl);  // keeps the connection cache
  HttpResponse response;
  Reception reception{&response, std::min(max_response_bytes_, request.max_response_bytes.value_or(max_response_bytes_)), ""};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    // No "Expect: 100-continue" round trip: our bodies are small and the server takes them.
    headers = curl_slist_append(headers, "Expect:");
  }
  std::string auth;
  if (!token.empty()) {
    auth = "Authorization: Bearer " + token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  {
    std::lock_guard<std::mutex> stop(stop_mu_);
    if (stopping_) timeout = std::min(timeout, kStoppedRequestTimeout);
  }
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min<int64_t>(timeout.count(), 10000)));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "rdmak8s-dra-driver/" RDMAK8S_VERSION);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reception);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reception);
  if (request.method == "POST" || request.method == "PUT" || !request.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  SetTransport(curl, config_);

  CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK && !reception.refused.empty()) {
    return UnavailableError(what + ": " + reception.refused);
  }
  if (rc == CURLE_OPERATION_TIMEDOUT && request.deadline) {
    return DeadlineExceededError(what + ": no answer within " + std::to_string(timeout.count()) +
                                 " ms (the caller's deadline)");
  }
  if (rc != CURLE_OK) {
    std::string detail = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    while (!detail.empty() && detail.back() == '\n') detail.pop_back();
    return UnavailableError(what + ": " + curl_easy_strerror(rc) + ": " + detail);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

void CurlKubeClient::Observe(std::string_view verb, const StatusOr<HttpResponse>& answer) const {
  if (!observer_) return;
  if (!answer.ok()) {
    observer_(verb, "none");
  } else if (answer->status >= 400) {
    observer_(verb, std::to_string(answer->status));
  }
}

void CurlKubeClient::StopRetries() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stopping_ = true;
  stop_cv_.notify_all();
}

StatusOr<HttpResponse> CurlKubeClient::Send(const HttpRequest& request) {
  try {
    return SendLoop(request);
  } catch (const std::exception& e) {  // allocation failures: the caller gets an error, not a crash
    return InternalError(request.method + " " + Url(config_.server, request) + ": " + e.what());
  }
}

StatusOr<HttpResponse> CurlKubeClient::SendLoop(const HttpRequest& request) {
  std::chrono::milliseconds backoff = retry_.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    void* curl = TakeHandle();
    if (curl == nullptr) return InternalError(request.method + " " + Url(config_.server, request) + ": curl_easy_init failed");
    StatusOr<HttpResponse> sent = SendOnce(curl, request);
    ReturnHandle(curl);
    Observe(request.method, sent);
    RDMAK8S_ASSIGN_OR_RETURN(HttpResponse response, std::move(sent));
    if (!Retryable(response.status) || attempt >= retry_.max_attempts) {
      if (Retryable(response.status)) {
        return ApiError(*this, request, response).Prepend("after " + std::to_string(attempt) + " attempts");
      }
      return response;
    }
    std::chrono::milliseconds wait =
        std::min(RetryAfter(response.retry_after, retry_.max_backoff).value_or(backoff), retry_.max_backoff);
    if (request.deadline && std::chrono::steady_clock::now() + wait >= *request.deadline) {
      // Waiting would answer after the caller stopped listening: say so now.
      return ApiError(*this, request, response)
          .Prepend("no retry: the " + std::to_string(wait.count()) + " ms backoff ends past the caller's deadline (" +
                   std::to_string(attempt) + " attempts)");
    }
    // The wait holds no lock: other callers' requests go on meanwhile.
    if (retry_.sleep) retry_.sleep(wait);
    std::unique_lock<std::mutex> stop(stop_mu_);
    if (!retry_.sleep) stop_cv_.wait_for(stop, wait, [&] { return stopping_; });
    if (stopping_) {
      return ApiError(*this, request, response)
          .Prepend("retries stopped: shutting down after " + std::to_string(attempt) + " attempts");
    }
    stop.unlock();
    backoff = std::min(backoff * 2, retry_.max_backoff);
  }
}



// ---- Streaming answers (watches). Kept apart from Send: a watch runs on a connection of its
// own for minutes, and must not hold Send's lock.

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
  const std::string url = Url(config_.server, request);
  const std::string what = request.method + " " + url;
  std::string token = config_.token;
  if (!config_.token_file.empty()) {
    RDMAK8S_ASSIGN_OR_RETURN(token, ReadToken(config_.token_file));
  }
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
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  std::string auth;
  if (!token.empty()) {
    auth = "Authorization: Bearer " + token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, curl_slist_free_all);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf.data());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
  // No overall timeout: the request's timeoutSeconds ends a watch; keepalive finds a dead peer.
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "rdmak8s-dra-driver/" RDMAK8S_VERSION);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, StreamBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, StreamProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &st);
  SetTransport(curl, config_);

  CURLcode rc = curl_easy_perform(curl);
  HttpResponse response;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  if (rc != CURLE_OK && !st.ended_by_caller) {
    std::string detail = errbuf[0] != '\0' ? errbuf.data() : curl_easy_strerror(rc);
    while (!detail.empty() && detail.back() == '\n') detail.pop_back();
    StatusOr<HttpResponse> failed = UnavailableError(what + ": " + curl_easy_strerror(rc) + ": " + detail);
    Observe("WATCH", failed);
    return failed;
  }
  if (response.status != 200) response.body = std::move(st.error_body);
  Observe("WATCH", response);
  return response;
}

}  // namespace rdmak8s::dra
