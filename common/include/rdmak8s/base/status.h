// Status and StatusOr<T>: how every rdmak8s function reports failure.
//
// Our code does not throw. A function that can fail returns Status (or StatusOr<T> when it also
// produces a value). A leaf error names the operation, the object and the cause
// ("read /sys/class/infiniband/mlx5_0/node_type: Permission denied"); each layer that passes it
// on prepends its own action with Status::Prepend / RDMAK8S_RETURN_IF_ERROR_CTX.
//
// "Not found" is its own code and must never be folded into a generic failure: callers decide
// whether a missing object is an error (kNotFound) or an empty answer.
//
// Thread safety: values; copy freely between threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rdmak8s {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input from a user, a config file or a peer
  kNotFound,            // the object does not exist (missing file, device, link, netns)
  kAlreadyExists,
  kPermissionDenied,
  kFailedPrecondition,  // the system is not in a state the operation needs (e.g. netns mode)
  kUnavailable,         // try again later (port INIT, kubelet not up)
  kDeadlineExceeded,
  kUnimplemented,       // the kernel/driver does not support the operation
  kInternal,            // an I/O or kernel error that fits none of the above
};

// "OK", "INVALID_ARGUMENT", ...
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The errno behind the failure when there was one, else 0.
  int sys_errno() const { return errno_; }

  // Returns a copy whose message is "<context>: <message>". No-op on OK.
  Status Prepend(std::string_view context) const;
  Status WithErrno(int err) const {
    Status s = *this;
    s.errno_ = err;
    return s;
  }

  // "NOT_FOUND: read /sys/...: No such file or directory"
  std::string ToString() const;

  // Explicitly discard a status when failure really does not matter (say why at the call).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int errno_ = 0;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status FailedPreconditionError(std::string message);
Status UnavailableError(std::string message);
Status DeadlineExceededError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);

// Maps an errno to a code (ENOENT/ENODEV/ESRCH -> kNotFound, EACCES/EPERM -> kPermissionDenied,
// EOPNOTSUPP -> kUnimplemented, EBUSY/EAGAIN -> kUnavailable, EINVAL -> kInvalidArgument,
// EEXIST -> kAlreadyExists, else kInternal) and builds "<what>: <strerror(err)>".
Status ErrnoError(int err, std::string_view what);

// A value or the Status that explains why there is none. Accessing value() on an error is a
// broken invariant (asserts in debug builds).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : v_(value) {}                       // NOLINT(implicit)
  StatusOr(T&& value) : v_(std::move(value)) {}                 // NOLINT(implicit)
  StatusOr(const Status& status) : v_(status) {                 // NOLINT(implicit)
    assert(!status.ok() && "StatusOr built from an OK status");
  }
  StatusOr(Status&& status) : v_(std::move(status)) {           // NOLINT(implicit)
    assert(!std::get<Status>(v_).ok() && "StatusOr built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  const T& value() const& { assert(ok()); return std::get<T>(v_); }
  T& value() & { assert(ok()); return std::get<T>(v_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  T value_or(T fallback) const& { return ok() ? std::get<T>(v_) : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace rdmak8s

#define RDMAK8S_CONCAT_INNER_(a, b) a##b
#define RDMAK8S_CONCAT_(a, b) RDMAK8S_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define RDMAK8S_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::rdmak8s::Status rdmak8s_status_ = (expr);        \
    if (!rdmak8s_status_.ok()) return rdmak8s_status_; \
  } while (0)

// Same, prepending `ctx` (a std::string_view-convertible expression) to the message.
#define RDMAK8S_RETURN_IF_ERROR_CTX(expr, ctx)                                 \
  do {                                                                         \
    ::rdmak8s::Status rdmak8s_status_ = (expr);                                \
    if (!rdmak8s_status_.ok()) return rdmak8s_status_.Prepend(ctx);            \
  } while (0)

// `lhs` = value of the StatusOr `rexpr`, or return its Status. lhs may declare: auto x.
#define RDMAK8S_ASSIGN_OR_RETURN(lhs, rexpr) \
  RDMAK8S_ASSIGN_OR_RETURN_IMPL_(RDMAK8S_CONCAT_(rdmak8s_statusor_, __LINE__), lhs, rexpr)
#define RDMAK8S_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                   \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()
