// One gRPC call to kubelet's pod-resources API over HTTP/2 (libnghttp2) on a unix socket: the
// socket I/O of cni/pod_resources_client.h.
#include "cni/pod_resources_client.h"

#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace rdmak8s::cni {

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kListPath[] = "/v1.PodResourcesLister/List";
constexpr size_t kMaxHeaderValue = 1024;  // grpc-message and the like, as shown in errors

// What the one stream of the call brought back.
struct CallState {
  std::string request;  // the framed request, handed to nghttp2 by ReadRequest
  size_t request_sent = 0;
  size_t max_body = 0;  // the frame's prefix and the largest message accepted
  std::string body;
  std::string http_status, grpc_status, grpc_message;
  bool closed = false;
  uint32_t reset_code = 0;
  std::string overflow;  // why the answer was cut off
};

int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
             const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto* call = static_cast<CallState*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string v(reinterpret_cast<const char*>(value), std::min(valuelen, kMaxHeaderValue));
  if (n == ":status") call->http_status = std::move(v);
  else if (n == "grpc-status") call->grpc_status = std::move(v);
  else if (n == "grpc-message") call->grpc_message = std::move(v);
  return 0;
}

int OnData(nghttp2_session*, uint8_t, int32_t, const uint8_t* data, size_t len, void* user) {
  auto* call = static_cast<CallState*>(user);
  if (call->body.size() + len > call->max_body) {
    call->overflow = "answer longer than its 5-byte gRPC prefix and a message of " +
                     std::to_string(call->max_body - 5) + " bytes";
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  call->body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int OnClose(nghttp2_session*, int32_t, uint32_t error_code, void* user) {
  auto* call = static_cast<CallState*>(user);
  call->closed = true;
  call->reset_code = error_code;
  return 0;
}

ssize_t ReadRequest(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                    nghttp2_data_source*, void* user) {
  auto* call = static_cast<CallState*>(user);
  const size_t n = std::min(length, call->request.size() - call->request_sent);
  std::copy_n(call->request.data() + call->request_sent, n, reinterpret_cast<char*>(buf));
  call->request_sent += n;
  if (call->request_sent == call->request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

nghttp2_nv Header(const char* name, const std::string& value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name)),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), std::strlen(name), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// gRPC status codes (grpc/doc/statuscodes.md) as ours.
Status FromGrpcStatus(const std::string& code, const std::string& message) {
  const std::string what = "kubelet answered grpc-status " + code + (message.empty() ? "" : ": " + message);
  if (code == "5") return NotFoundError(what + " (NOT_FOUND)");
  if (code == "12") return UnimplementedError(what + " (UNIMPLEMENTED)");
  if (code == "14") return UnavailableError(what + " (UNAVAILABLE)");
  if (code == "4") return DeadlineExceededError(what + " (DEADLINE_EXCEEDED)");
  return InternalError(what);
}

class Connection {
 public:
  Connection(std::string socket_path, Clock::time_point deadline, std::chrono::milliseconds timeout)
      : path_(std::move(socket_path)), deadline_(deadline), timeout_(timeout) {}
  ~Connection() {
    if (session_ != nullptr) nghttp2_session_del(session_);
    if (fd_ >= 0) close(fd_);
  }

  Status Connect() {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.empty() || path_.size() >= sizeof addr.sun_path) {
      return InvalidArgumentError("socket path of " + std::to_string(path_.size()) +
                                  " bytes (a unix socket path is 1 to " +
                                  std::to_string(sizeof addr.sun_path - 1) + ")");
    }
    std::memcpy(addr.sun_path, path_.data(), path_.size());
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) return ErrnoError(errno, "socket");
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      const int err = errno;
      if (err == ENOENT) return NotFoundError("connect: no socket there (is kubelet running?)");
      if (err == ECONNREFUSED || err == EAGAIN) {
        return UnavailableError("connect: " + std::string(std::strerror(err)) + " (nothing serves it)");
      }
      return ErrnoError(err, "connect");
    }
    return Status::Ok();
  }

  StatusOr<std::string> Call(const char* path, std::string request, size_t max_body) {
    nghttp2_session_callbacks* cbs = nullptr;
    if (nghttp2_session_callbacks_new(&cbs) != 0) return InternalError("nghttp2: out of memory");
    nghttp2_session_callbacks_set_on_header_callback(cbs, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, OnClose);
    const int rv = nghttp2_session_client_new(&session_, cbs, &call_);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) return InternalError(std::string("nghttp2: ") + nghttp2_strerror(rv));

    call_.request = EncodeGrpcMessage(request);
    call_.max_body = max_body;
    // Bounds what kubelet's headers may cost us; the answer itself is bounded by OnData.
    const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                               {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 16 << 10},
                                               {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    if (int e = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 3); e != 0) {
      return InternalError(std::string("nghttp2 settings: ") + nghttp2_strerror(e));
    }
    const std::string method = "POST", scheme = "http", authority = "localhost", target = path,
                      type = "application/grpc", te = "trailers",
                      grpc_timeout = std::to_string(std::max<int64_t>(timeout_.count(), 1)) + "m";
    const nghttp2_nv headers[] = {Header(":method", method),     Header(":scheme", scheme),
                                  Header(":authority", authority), Header(":path", target),
                                  Header("content-type", type),  Header("te", te),
                                  Header("grpc-timeout", grpc_timeout)};
    nghttp2_data_provider body{};
    body.read_callback = ReadRequest;
    const int32_t stream = nghttp2_submit_request(session_, nullptr, headers,
                                                  sizeof headers / sizeof headers[0], &body, nullptr);
    if (stream < 0) return InternalError(std::string("nghttp2 request: ") + nghttp2_strerror(stream));

    RDMAK8S_RETURN_IF_ERROR(Exchange());
    if (call_.reset_code != 0) {
      return InternalError("kubelet reset the stream (HTTP/2 error " + std::to_string(call_.reset_code) + ")");
    }
    if (call_.http_status != "200") return InternalError("kubelet answered HTTP status " + call_.http_status);
    if (call_.grpc_status.empty()) return InternalError("kubelet's answer has no grpc-status");
    if (call_.grpc_status != "0") return FromGrpcStatus(call_.grpc_status, call_.grpc_message);
    return std::move(call_.body);
  }

 private:
  // Milliseconds left before the deadline; DeadlineExceeded once none is.
  StatusOr<int> Left() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    if (left.count() <= 0) {
      return DeadlineExceededError("no answer within " + std::to_string(timeout_.count()) + " ms");
    }
    return static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
  }

  Status Wait(short events) {
    while (true) {
      RDMAK8S_ASSIGN_OR_RETURN(int left, Left());
      pollfd p{fd_, events, 0};
      const int n = poll(&p, 1, left);
      if (n > 0) return Status::Ok();
      if (n < 0 && errno != EINTR) return ErrnoError(errno, "poll");
    }
  }

  // Sends what nghttp2 has to send and feeds it what kubelet sends until the stream closes.
  Status Exchange() {
    char buf[16 << 10];
    while (true) {
      while (true) {
        const uint8_t* out = nullptr;
        const ssize_t n = nghttp2_session_mem_send(session_, &out);
        if (n < 0) return InternalError(std::string("nghttp2 send: ") + nghttp2_strerror(static_cast<int>(n)));
        if (n == 0) break;
        for (ssize_t done = 0; done < n;) {
          const ssize_t w = send(fd_, out + done, static_cast<size_t>(n - done), MSG_NOSIGNAL);
          if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            RDMAK8S_RETURN_IF_ERROR(Wait(POLLOUT));
            continue;
          }
          if (w < 0) return ErrnoError(errno, "send");
          done += w;
        }
      }
      if (call_.closed) return Status::Ok();
      RDMAK8S_RETURN_IF_ERROR(Wait(POLLIN));
      const ssize_t r = recv(fd_, buf, sizeof buf, 0);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r < 0) return ErrnoError(errno, "recv");
      if (r == 0) return UnavailableError("kubelet closed the connection before it answered");
      const ssize_t used = nghttp2_session_mem_recv(session_, reinterpret_cast<uint8_t*>(buf), static_cast<size_t>(r));
      if (used < 0) {
        if (!call_.overflow.empty()) return InvalidArgumentError(call_.overflow);
        return InternalError(std::string("HTTP/2 from kubelet: ") + nghttp2_strerror(static_cast<int>(used)));
      }
    }
  }

  std::string path_;
  Clock::time_point deadline_;
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  nghttp2_session* session_ = nullptr;
  CallState call_;
};

}  // namespace

StatusOr<std::vector<PodResourcesEntry>> ListPodResources(const std::string& socket_path,
                                                          std::chrono::milliseconds timeout,
                                                          const PodResourcesBounds& bounds) {
  const std::string what = "kubelet pod-resources List on " + socket_path;
  Connection conn(socket_path, Clock::now() + timeout, timeout);
  RDMAK8S_RETURN_IF_ERROR_CTX(conn.Connect(), what);
  auto body = conn.Call(kListPath, EncodeListPodResourcesRequest(), bounds.max_message_bytes + 5);
  if (!body.ok()) return body.status().Prepend(what);
  auto message = DecodeGrpcMessage(*body, bounds.max_message_bytes);
  if (!message.ok()) return message.status().Prepend(what);
  auto pods = DecodeListPodResourcesResponse(*message, bounds);
  if (!pods.ok()) return pods.status().Prepend(what);
  return pods;
}

}  // namespace rdmak8s::cni
