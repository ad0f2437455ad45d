// The KubeApi role's shared helpers (path and query escaping, ApiError: an answer decoded into a
// Status) and CurlKubeClient's one-shot requests (Send): a pooled libcurl handle each, the attempt
// bounded by the caller's deadline, 429/5xx retried with backoff until StopRetries. What every
// request carries: kube_request.h; streamed answers (watches): kube_client_stream.cc.

#include "dra/api/kube_client.h"

#include <algorithm>
#include <cctype>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "dra/api/kube_request.h"
#include "rdmak8s/base/json_reader.h"
#include "rdmak8s/base/numbers.h"

namespace rdmak8s::dra {
namespace {

using internal::Url;

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
  RDMAK8S_ASSIGN_OR_RETURN(const std::string token, internal::BearerToken(config_));

  // This attempt's time: what is left before the request's deadline, at most kRequestTimeout.
  auto timeout = kRequestTimeout;
  if (request.deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *request.deadline - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds(0)) return DeadlineExceededError(what + ": deadline passed before it was sent");
    timeout = std::min(timeout, left);
  }
  {
    std::lock_guard<std::mutex> stop(stop_mu_);
    if (stopping_) timeout = std::min(timeout, kStoppedRequestTimeout);
  }

  curl_easy_reset(curl);  // keeps the connection cache
  HttpResponse response;
  Reception reception{&response, std::min(max_response_bytes_, request.max_response_bytes.value_or(max_response_bytes_)), ""};
  char errbuf[CURL_ERROR_SIZE] = {0};
  const internal::HeaderList headers = internal::RequestHeaders(request, token);
  internal::SetRequestOptions(curl, url, request, headers.get(), errbuf, config_);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min<int64_t>(timeout.count(), 10000)));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reception);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reception);
  if (internal::HasBody(request)) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }

  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK && !reception.refused.empty()) {
    return UnavailableError(what + ": " + reception.refused);
  }
  if (rc == CURLE_OPERATION_TIMEDOUT && request.deadline) {
    return DeadlineExceededError(what + ": no answer within " + std::to_string(timeout.count()) +
                                 " ms (the caller's deadline)");
  }
  if (rc != CURLE_OK) return internal::CurlFailure(what, rc, errbuf);
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

}  // namespace rdmak8s::dra
