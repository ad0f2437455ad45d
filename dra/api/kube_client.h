// A small Kubernetes REST client over libcurl: one request at a time, JSON in and out.
//
// Why libcurl: Debian's libcurl4-openssl-dev is the best kept HTTP client in the archive, does
// TLS with CA bundles given as files or in memory (kubeconfig *-data), client certificates,
// HTTP/1.1 keep-alive and unix-socket transport (CURLOPT_UNIX_SOCKET_PATH, used by the tests),
// which cpp-httplib does not all do as a Debian package.
//
// What a request gets:
//   - "Authorization: Bearer <token>", the token file re-read for each request (rotation);
//   - the server's certificate verified against the configured CA (never skipped unless the
//     kubeconfig says insecure-skip-tls-verify);
//   - 429 and 500/502/503/504 retried with backoff, honouring Retry-After (seconds), up to
//     RetryPolicy::max_attempts; the last answer is then returned as an error. StopRetries()
//     (the driver is shutting down) ends a backoff wait at once and retries no more.
// Every other answer (2xx, 404, 409, 410, ...) is returned as it is: the caller decides.
//
// Errors name the method, the URL and the cause: "GET https://h/apis/...: SSL peer
// certificate or SSH remote key was not OK: ..."; ApiError names the HTTP status and the
// message of the server's Status object.
//
// Thread safety: Send may be called from several threads, and they do not wait for each other:
// each request takes a libcurl handle (with its connection) of its own from a small pool, and
// a 429/5xx backoff holds no lock, so one slow or hung answer delays only its own caller.
//
// Answers are bounded: a body past kMaxResponseBytes (or the request's own max_response_bytes:
// kMaxObjectBytes for one object), Retry-After as large as the server likes
// (clamped to RetryPolicy::max_backoff, never overflowing), a header line of any length.
// No exception leaves Send (an allocation failure in a libcurl callback ends that request).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dra/api/kube_config.h"
#include "rdmak8s/base/status.h"

namespace rdmak8s::dra {

inline constexpr long kHttpNotFound = 404;
inline constexpr long kHttpConflict = 409;
inline constexpr long kHttpGone = 410;
inline constexpr long kHttpTooManyRequests = 429;

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT, DELETE
  std::string path;            // "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=..."
  std::string body;            // JSON, for POST and PUT
  // When set, Send returns by then, retries included: each attempt's timeout is what is left,
  // and a backoff that would end past it is not waited (the answer is returned as an error
  // saying so). Unset: each attempt has kRequestTimeout.
  std::optional<std::chrono::steady_clock::time_point> deadline{};
  // When set, a body past this many bytes is refused as kMaxResponseBytes is (the client's own
  // cap still holds when it is smaller): kMaxObjectBytes for a read of one object.
  std::optional<size_t> max_response_bytes{};
};

// One path segment (a namespace, an object name) percent-encoded (RFC 3986: everything but
// ALPHA / DIGIT / "-" / "." / "_" / "~"), so that no name can add a segment, a query or a
// fragment; a segment "." or ".." is encoded whole (%2E): never a dot segment.
std::string PathSegment(std::string_view segment);
// A query parameter's value percent-encoded the same way (a field selector, a continue token, a
// resourceVersion).
std::string QueryValue(std::string_view value);

// The largest answer body read. The largest real ones are a page of our node's ResourceSlice
// list (at most 100 slices: one pool, about 1 MiB for 1,024 devices) and a ResourceClaim (an
// object the API server keeps under etcd's 1.5 MiB); past this cap the answer is an error
// naming it, and nothing more is read. It bounds list answers (a page of up to 100 objects);
// a read of one object asks for kMaxObjectBytes.
inline constexpr size_t kMaxResponseBytes = size_t{64} << 20;
// The largest answer to a read of one object (a ResourceClaim): the API server refuses to
// store an object past etcd's request limit (1.5 MiB by default, --max-request-bytes), and
// the JSON it serves of one is larger by its managedFields and escaping only: twice that.
inline constexpr size_t kMaxObjectBytes = size_t{3} << 20;

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, when the server sent one
};

// The role the rest of dra/api talks to; tests can put any server behind it.
class KubeApi {
 public:
  virtual ~KubeApi() = default;
  // The server's answer, or an error when none came (connection, TLS, token file) or when
  // retries of 429/5xx ran out.
  virtual StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
  // "https://host:port" (for messages).
  virtual const std::string& server() const = 0;
  // A long answer read as it arrives (a watch: one JSON event per line). Each line of a 200
  // answer's body goes to `on_line` as it arrives; the call ends when the server ends the
  // answer, `on_line` returns false, or `cancelled()` turns true (asked about once a second
  // and on every piece of data). Returns the status (for one other than 200, with its body),
  // or an error when no answer came. Not retried; not serialized with Send. Default:
  // Unimplemented (test doubles that serve no watch).
  virtual StatusOr<HttpResponse> Stream(const HttpRequest& request,
                                        const std::function<bool(std::string_view line)>& on_line,
                                        const std::function<bool()>& cancelled);
};

// The error for an answer the caller did not expect: "<METHOD> <url>: HTTP <status>: <message>"
// with 404 -> NotFound, 409 -> AlreadyExists, 401/403 -> PermissionDenied, 429/5xx ->
// Unavailable, others -> Internal (410 -> FailedPrecondition).
Status ApiError(const KubeApi& api, const HttpRequest& request, const HttpResponse& response);

struct RetryPolicy {
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{250};
  std::chrono::milliseconds max_backoff{30000};
  // How to wait; tests record the waits instead. Null: std::this_thread::sleep_for.
  std::function<void(std::chrono::milliseconds)> sleep;
};

class CurlKubeClient : public KubeApi {
 public:
  // InvalidArgument when the config names no server; Internal when libcurl cannot start.
  // `max_response_bytes`: kMaxResponseBytes but in tests.
  static StatusOr<std::unique_ptr<CurlKubeClient>> Create(KubeConfig config, RetryPolicy retry = {},
                                                          size_t max_response_bytes = kMaxResponseBytes);
  ~CurlKubeClient() override;

  StatusOr<HttpResponse> Send(const HttpRequest& request) override;
  const std::string& server() const override { return config_.server; }
  // On a connection of its own (a watch does not hold up Send). Ends also at StopRetries.
  StatusOr<HttpResponse> Stream(const HttpRequest& request,
                                const std::function<bool(std::string_view line)>& on_line,
                                const std::function<bool()>& cancelled) override;

  // Shutdown: wakes a Send waiting out a 429/5xx backoff, which then returns that answer as an
  // error (kUnavailable, "retries stopped: shutting down"); from now on no answer is retried
  // and each request is bounded to kStoppedRequestTimeout, so what the driver still sends on
  // its way out (the exit delete of slices) cannot hold it up. Does not block; any thread.
  void StopRetries();
  // Told of every answer that is an error (HTTP status 400 or more: `code` is it) and of every
  // attempt that got no answer (`code` "none": connection, TLS, timeout, token file), each
  // attempt of a retried request on its own; `verb` is the method, "WATCH" for Stream. For the
  // driver's metrics (dra/metrics.h). Set it before the first request; it is called on the
  // requesting thread.
  using ErrorObserver = std::function<void(std::string_view verb, std::string_view code)>;
  void SetErrorObserver(ErrorObserver observer) { observer_ = std::move(observer); }
  static constexpr std::chrono::milliseconds kStoppedRequestTimeout{2000};
  static constexpr std::chrono::milliseconds kRequestTimeout{60000};
  // Idle handles kept for reuse (their connections stay open); more callers at once get new ones.
  static constexpr size_t kMaxIdleHandles = 4;

 private:
  CurlKubeClient(KubeConfig config, RetryPolicy retry, size_t max_response_bytes, void* curl);
  StatusOr<HttpResponse> SendLoop(const HttpRequest& request);
  StatusOr<HttpResponse> SendOnce(void* curl, const HttpRequest& request);
  // A handle of the pool, or a new one (nullptr when libcurl cannot make one); back to the pool.
  void* TakeHandle();
  void ReturnHandle(void* curl);
  void Observe(std::string_view verb, const StatusOr<HttpResponse>& answer) const;

  const KubeConfig config_;
  const RetryPolicy retry_;
  const size_t max_response_bytes_;
  ErrorObserver observer_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_
  std::mutex pool_mu_;
  std::vector<void*> idle_;  // CURL*, guarded by pool_mu_; each used by one request at a time
};

}  // namespace rdmak8s::dra
