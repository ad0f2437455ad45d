#include "fakes/fake_api_server.h"

#include "fakes/fake_claim_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <set>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace rdmak8s::testing {
namespace {

using nlohmann::json;

std::string Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
  }
  return "Status";
}

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason}, {"code", code}}
      .dump();
}

// A named object's absence, as apierrors.NewNotFound says it: the details name the object (an
// unserved path's 404 has none: that is how a client tells a missing object from a missing
// API version).
std::string NotFoundBody(const std::string& group, const std::string& resource, const std::string& name) {
  json body = json::parse(StatusBody(404, "NotFound", resource + (group.empty() ? "" : "." + group) + " \"" + name +
                                                          "\" not found"));
  body["details"] = {{"name", name}, {"kind", resource}};
  if (!group.empty()) body["details"]["group"] = group;
  return body.dump();
}

std::string UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? p : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

// v1beta1 device {name, basic{...}} <-> v1 device {name, ...}.
json DeviceToV1(const json& d) {
  json out = d.value("basic", json::object());
  out["name"] = d.at("name");
  return out;
}
json DeviceToV1beta1(const json& d) {
  json basic = d;
  basic.erase("name");
  return json{{"name", d.at("name")}, {"basic", basic}};
}
json SliceInVersion(json slice, const std::string& version) {
  slice["apiVersion"] = "resource.k8s.io/" + version;
  if (version == "v1beta1" && slice["spec"].contains("devices")) {
    for (auto& d : slice["spec"]["devices"]) d = DeviceToV1beta1(d);
  }
  return slice;
}

bool IsDnsLabelName(const std::string& s, size_t max = 63) {
  if (s.empty() || s.size() > max) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}
bool IsDnsSubdomainName(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (const auto& label : Split(s, '.')) {
    if (!IsDnsLabelName(label)) return false;
  }
  return true;
}
bool IsCIdentifierName(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}
// k8s.io/dynamic-resource-allocation's rule for attribute and capacity names.
bool IsQualifiedAttributeName(const std::string& s) {
  size_t slash = s.find('/');
  if (slash == std::string::npos) return IsCIdentifierName(s);
  return IsDnsSubdomainName(s.substr(0, slash), 63) && IsCIdentifierName(s.substr(slash + 1));
}
// A label key ("prefix/name", name at most 63 of [A-Za-z0-9_.-] starting and ending alnum).
bool IsLabelKey(const std::string& s) {
  size_t slash = s.find('/');
  std::string name = slash == std::string::npos ? s : s.substr(slash + 1);
  if (slash != std::string::npos && !IsDnsSubdomainName(s.substr(0, slash), 253)) return false;
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}
bool IsLabelValue(const std::string& s) { return s.empty() || (s.size() <= 63 && IsLabelKey(s) && s.find('/') == std::string::npos); }

// KEP-5007's rules for a device's bindingConditions / bindingFailureConditions
// (pkg/apis/resource/validation validateDeviceBindingParameters); "" when valid.
std::string ValidateBindingConditions(const json& d, const std::string& at) {
  const char* kLists[] = {"bindingConditions", "bindingFailureConditions"};
  std::set<std::string> seen[2];
  for (int l = 0; l < 2; ++l) {
    if (!d.contains(kLists[l])) continue;
    const json& list = d[kLists[l]];
    const std::string lat = at + "." + kLists[l];
    if (!list.is_array()) return lat + ": Invalid value: must be a list";
    if (list.size() > 4) {
      return lat + ": Too many: " + std::to_string(list.size()) + ": must have at most 4 items";
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string iat = lat + "[" + std::to_string(i) + "]";
      const std::string c = list[i].is_string() ? list[i].get<std::string>() : "";
      if (!IsLabelKey(c)) {
        return iat + ": Invalid value: \"" + c + "\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
      }
      if (!seen[l].insert(c).second) return iat + ": Duplicate value: \"" + c + "\"";
      if (l == 1 && seen[0].count(c)) {
        return iat + ": Invalid value: \"" + c + "\": bindingFailureConditions must not overlap with bindingConditions";
      }
    }
  }
  if (seen[0].empty() && !seen[1].empty()) {
    return at + ".bindingConditions: Invalid value: null: bindingConditions are required to use bindingFailureConditions";
  }
  if (seen[1].empty() && !seen[0].empty()) {
    return at + ".bindingFailureConditions: Invalid value: null: bindingFailureConditions are required to use bindingConditions";
  }
  if (d.contains("bindsToNode") && !d["bindsToNode"].is_boolean()) return at + ".bindsToNode: Invalid value: must be a boolean";
  return "";
}

// What the v1 API server's validation says of a slice in v1 shape; "" when valid.
std::string ValidateSlice(const json& obj) {
  const json& meta = obj.value("metadata", json::object());
  if (!meta.is_object() || !IsDnsSubdomainName(meta.value("name", ""), 253)) {
    return "metadata.name: Invalid value: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters";
  }
  const json& spec = obj["spec"];
  if (!spec.is_object()) return "spec: Required value";
  const std::string driver = spec.value("driver", "");
  if (!IsDnsSubdomainName(driver, 63)) return "spec.driver: Invalid value: \"" + driver + "\": must be a DNS subdomain of at most 63 characters";
  const json& pool = spec.value("pool", json::object());
  if (!pool.is_object() || pool.value("name", "").empty()) return "spec.pool.name: Required value";
  if (!pool.value("generation", json(0)).is_number_integer() || pool.value("generation", 0) < 0) return "spec.pool.generation: Invalid value";
  if (pool.value("resourceSliceCount", 0) < 1) return "spec.pool.resourceSliceCount: Invalid value: must be greater than zero";
  const json& devices = spec["devices"];
  std::set<std::string> names;
  for (size_t i = 0; i < devices.size(); ++i) {
    const json& d = devices[i];
    const std::string at = "spec.devices[" + std::to_string(i) + "]";
    const std::string name = d.value("name", "");
    if (!IsDnsLabelName(name)) {
      return at + ".name: Invalid value: \"" + name + "\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
    }
    if (!names.insert(name).second) return at + ".name: Duplicate value: \"" + name + "\"";
    const json attributes = d.value("attributes", json::object());
    const json capacity = d.value("capacity", json::object());
    if (attributes.size() + capacity.size() > 32) {
      return at + ": Too many: " + std::to_string(attributes.size() + capacity.size()) + ": must have at most 32 attributes and capacities";
    }
    for (const auto& [k, v] : attributes.items()) {
      if (!IsQualifiedAttributeName(k)) return at + ".attributes[" + k + "]: Invalid value: not a C identifier of at most 32 after an optional domain";
      if (!v.is_object() || v.size() != 1) return at + ".attributes[" + k + "]: Required value: exactly one value must be specified";
      for (const char* kind : {"string", "version"}) {
        if (v.contains(kind) && (!v[kind].is_string() || v[kind].get<std::string>().size() > 64)) {
          return at + ".attributes[" + k + "]." + kind + ": Too long: may not be more than 64 bytes";
        }
      }
    }
    for (const auto& [k, v] : capacity.items()) {
      if (!IsQualifiedAttributeName(k)) return at + ".capacity[" + k + "]: Invalid value: not a C identifier of at most 32 after an optional domain";
      if (!v.is_object() || !v.contains("value")) return at + ".capacity[" + k + "].value: Required value";
    }
    if (d.contains("taints")) {
      const json& taints = d["taints"];
      if (!taints.is_array() || taints.size() > 4) return at + ".taints: Too many: must have at most 4";
      for (size_t t = 0; t < taints.size(); ++t) {
        const std::string tat = at + ".taints[" + std::to_string(t) + "]";
        if (!IsLabelKey(taints[t].value("key", ""))) return tat + ".key: Invalid value: must be a qualified name";
        if (!IsLabelValue(taints[t].value("value", ""))) return tat + ".value: Invalid value: must be a valid label value";
        const std::string effect = taints[t].value("effect", "");
        // KEP-5055 beta (1.36) added "None", an informational taint.
        if (effect != "NoSchedule" && effect != "NoExecute" && effect != "None") {
          return tat + ".effect: Unsupported value: \"" + effect +
                 "\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"";
        }
      }
    }
    if (std::string invalid = ValidateBindingConditions(d, at); !invalid.empty()) return invalid;
  }
  return "";
}

struct Conn {
  int fd;
  SSL* ssl;
  ssize_t Read(char* buf, size_t n) { return ssl ? SSL_read(ssl, buf, static_cast<int>(n)) : ::read(fd, buf, n); }
  bool Write(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t w = ssl ? SSL_write(ssl, s.data() + off, static_cast<int>(s.size() - off))
                      : ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);  // a client gone: an error
      if (w <= 0) return false;
      off += static_cast<size_t>(w);
    }
    return true;
  }
};

}  // namespace

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : options_(std::move(options)),
      token_(options_.token),
      serve_v1_(options_.serve_v1),
      serve_v1beta1_(options_.serve_v1beta1) {}

FakeApiServer::~FakeApiServer() { Stop(); }

bool FakeApiServer::Start(const std::string& unix_socket) {
  const bool tls = !options_.tls_cert_pem.empty() && !options_.tls_key_pem.empty();
  if (tls) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    BIO* cb = BIO_new_mem_buf(options_.tls_cert_pem.data(), static_cast<int>(options_.tls_cert_pem.size()));
    BIO* kb = BIO_new_mem_buf(options_.tls_key_pem.data(), static_cast<int>(options_.tls_key_pem.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(cb);
    BIO_free(kb);
    bool ok = cert && key && SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!ok) {
      SSL_CTX_free(ctx);
      return false;
    }
    ssl_ctx_ = ctx;
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  } else {
    socket_path_ = unix_socket;
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (unix_socket.size() >= sizeof(addr.sun_path)) return false;
    std::strcpy(addr.sun_path, unix_socket.c_str());
    ::unlink(unix_socket.c_str());
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
  }
  if (::listen(listen_fd_, 16) != 0) return false;
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return true;
}

void FakeApiServer::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);  // a watch between its check and its wait sees it
  }
  events_cv_.notify_all();
  ReleaseHeld();
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(conn_threads_);
  }
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) ::close(fd);
    conn_fds_.clear();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  if (ssl_ctx_) SSL_CTX_free(static_cast<SSL_CTX*>(ssl_ctx_));
  ssl_ctx_ = nullptr;
}

std::string FakeApiServer::url() const {
  return ssl_ctx_ ? "https://127.0.0.1:" + std::to_string(port_) : "http://localhost";
}

void FakeApiServer::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_ || errno != EINTR) return;
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    conn_fds_.push_back(fd);
    conn_threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeApiServer::Serve(int fd) {
  Conn conn{fd, nullptr};
  if (ssl_ctx_) {
    conn.ssl = SSL_new(static_cast<SSL_CTX*>(ssl_ctx_));
    SSL_set_fd(conn.ssl, fd);
    if (SSL_accept(conn.ssl) != 1) {  // e.g. the client rejected our certificate
      SSL_free(conn.ssl);
      return;  // the fd is closed by Stop's bookkeeping below
    }
  }
  std::string buf;
  char chunk[16384];
  while (!stopping_) {
    size_t header_end;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = conn.Read(chunk, sizeof(chunk));
      if (n <= 0) goto done;
      buf.append(chunk, static_cast<size_t>(n));
    }
    {
      std::vector<std::string> lines = Split(buf.substr(0, header_end), '\n');
      for (auto& l : lines) if (!l.empty() && l.back() == '\r') l.pop_back();
      std::vector<std::string> request_line = Split(lines[0], ' ');
      if (request_line.size() < 2) goto done;
      std::map<std::string, std::string> headers;
      for (size_t i = 1; i < lines.size(); ++i) {
        size_t colon = lines[i].find(':');
        if (colon == std::string::npos) continue;
        std::string name = lines[i].substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        std::string value = lines[i].substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        headers[name] = value;
      }
      size_t length = headers.count("content-length") ? std::stoul(headers["content-length"]) : 0;
      if (headers.count("expect") && !conn.Write("HTTP/1.1 100 Continue\r\n\r\n")) goto done;
      buf.erase(0, header_end + 4);
      while (buf.size() < length) {
        ssize_t n = conn.Read(chunk, sizeof(chunk));
        if (n <= 0) goto done;
        buf.append(chunk, static_cast<size_t>(n));
      }
      std::string body = buf.substr(0, length);
      buf.erase(0, length);
      HoldIfAsked(request_line[1]);
      Response r = Handle(request_line[0], request_line[1], headers, body);
      if (r.watch) {
        if (!ServeWatch(&conn, *r.watch)) goto done;
        continue;
      }
      std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) +
                        "\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(r.body.size()) + "\r\n";
      if (!r.retry_after.empty()) out += "Retry-After: " + r.retry_after + "\r\n";
      out += "\r\n" + r.body;
      if (!conn.Write(out)) goto done;
    }
  }
done:
  if (conn.ssl) {
    SSL_shutdown(conn.ssl);
    SSL_free(conn.ssl);
  }
}

void FakeApiServer::SetToken(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}
void FakeApiServer::AddNode(const std::string& name, const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  nodes_[name] = uid;
  CollectGarbageLocked();
}
void FakeApiServer::DeleteNode(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.erase(name);
  CollectGarbageLocked();
}
void FakeApiServer::SetServedVersions(bool v1, bool v1beta1) {
  std::lock_guard<std::mutex> lock(mu_);
  serve_v1_ = v1;
  serve_v1beta1_ = v1beta1;
}
bool FakeApiServer::ServedLocked(const std::string& version) const {
  return (version == "v1" && serve_v1_) || (version == "v1beta1" && serve_v1beta1_);
}
int FakeApiServer::DeleteSlices(const std::string& node, const std::string& driver) {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (auto it = slices_.begin(); it != slices_.end();) {
    const json& sp = it->second["spec"];
    if ((!node.empty() && sp.value("nodeName", "") != node) || (!driver.empty() && sp.value("driver", "") != driver)) {
      ++it;
      continue;
    }
    RecordLocked("DELETED", it->second);
    it = slices_.erase(it);
    ++n;
  }
  AllocateLocked();
  return n;
}
void FakeApiServer::CompactWatchHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
  // As a restarted server's watch cache: even the latest resourceVersion given out is too old;
  // a list from now on gives one that can be watched from.
  ++resource_version_;
  oldest_rv_ = resource_version_ + 1;
}
void FakeApiServer::EndWatches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++watch_epoch_;
  }
  events_cv_.notify_all();
}
int FakeApiServer::open_watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_watches_;
}
void FakeApiServer::AnswerNext(const std::string& prefix, int status, std::string body, int count) {
  std::lock_guard<std::mutex> lock(mu_);
  canned_.push_back({prefix, status, std::move(body), count});
}
void FakeApiServer::RecordLocked(const std::string& type, const json& object) {
  json o = object;
  if (type == "DELETED") o["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  events_.push_back({std::stoll(o["metadata"].value("resourceVersion", "0")), type, std::move(o)});
  events_cv_.notify_all();
}
void FakeApiServer::CollectGarbageLocked() {
  for (auto it = slices_.begin(); it != slices_.end();) {
    bool orphan = false;
    for (const auto& ref : it->second["metadata"].value("ownerReferences", json::array())) {
      if (ref.value("kind", "") != "Node") continue;
      auto node = nodes_.find(ref.value("name", ""));
      orphan |= node == nodes_.end() || node->second != ref.value("uid", "");
    }
    if (!orphan) {
      ++it;
      continue;
    }
    RecordLocked("DELETED", it->second);
    it = slices_.erase(it);
  }
}

bool FakeApiServer::ServeWatch(void* conn_ptr, const WatchSpec& spec) {
  Conn& conn = *static_cast<Conn*>(conn_ptr);
  auto chunk = [](const std::string& data) {
    std::array<char, 32> size{};
    std::snprintf(size.data(), size.size(), "%zx\r\n", data.size());
    return std::string(size.data()) + data + "\r\n";
  };
  auto matches = [&](const json& o) {
    const json& sp = o["spec"];
    return (spec.node.empty() || sp.value("nodeName", "") == spec.node) &&
           (spec.driver.empty() || sp.value("driver", "") == spec.driver);
  };
  auto line = [&](const std::string& type, const json& object) {
    return json{{"type", type}, {"object", SliceInVersion(object, spec.version)}}.dump() + "\n";
  };
  if (!conn.Write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")) {
    return false;
  }
  std::unique_lock<std::mutex> lock(mu_);
  ++open_watches_;
  events_cv_.notify_all();
  const uint64_t epoch = watch_epoch_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(spec.timeout_s);
  std::vector<std::string> out;
  int64_t pos = spec.from;
  bool ended = false;
  if (spec.from < 0) {
    for (const auto& [n, obj] : slices_) {
      if (matches(obj)) out.push_back(line("ADDED", obj));
    }
    pos = resource_version_;
  } else if (spec.from + 1 < oldest_rv_) {
    out.push_back(json{{"type", "ERROR"},
                       {"object", json::parse(StatusBody(410, "Expired", "too old resource version: " +
                                                                     std::to_string(spec.from) + " (" +
                                                                     std::to_string(oldest_rv_) + ")"))}}
                      .dump() + "\n");
    ended = true;
  }
  bool ok = true;
  while (ok) {
    if (!ended) {
      for (const auto& e : events_) {
        if (e.rv > pos && matches(e.object)) out.push_back(line(e.type, e.object));
        pos = std::max(pos, e.rv);
      }
    }
    if (!out.empty()) {
      std::vector<std::string> batch;
      batch.swap(out);
      lock.unlock();
      for (const auto& l : batch) ok = ok && conn.Write(chunk(l));
      lock.lock();
      continue;
    }
    if (ended || stopping_ || watch_epoch_ != epoch) break;
    const bool more = events_cv_.wait_until(lock, deadline, [&] {
      return stopping_ || watch_epoch_ != epoch || (!events_.empty() && events_.back().rv > pos);
    });
    if (!more) break;  // timeoutSeconds: the server ends the watch
  }
  --open_watches_;
  lock.unlock();
  return ok && conn.Write("0\r\n\r\n");
}
void FakeApiServer::AddClaim(json claim) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto& m = claim.at("metadata");
  const std::string key = m.at("namespace").get<std::string>() + "/" + m.at("name").get<std::string>();
  claim["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  claims_[key] = std::move(claim);
  AllocateLocked();
}
bool FakeApiServer::DeleteClaim(const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (claims_.erase(ns + "/" + name) == 0) return false;
  AllocateLocked();
  return true;
}
void FakeApiServer::AllocateLocked() {
  std::array<char, 32> now{};
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::strftime(now.data(), now.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
  for (const auto& key : allocator_.Run(slices_, claims_, now.data())) {
    claims_[key]["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  }
}
json FakeApiServer::Claim(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = claims_.find(ns + "/" + name);
  return it == claims_.end() ? json() : it->second;
}
void FakeApiServer::GrantClaimStatus(std::set<std::string> drivers) {
  std::lock_guard<std::mutex> lock(mu_);
  status_grants_ = std::move(drivers);
}
void FakeApiServer::ConflictNextClaimStatusUpdates(json entry, int count) {
  std::lock_guard<std::mutex> lock(mu_);
  status_conflict_entry_ = std::move(entry);
  status_conflicts_ = count;
}
FakeApiServer::Response FakeApiServer::HandleClaimStatus(const std::string& key, const std::string& body) {
  auto it = claims_.find(key);
  const std::string name = key.substr(key.find('/') + 1);
  if (it == claims_.end()) return {404, NotFoundBody("resource.k8s.io", "resourceclaims", name), ""};
  if (status_conflicts_ > 0) {  // another writer's update lands first
    --status_conflicts_;
    it->second["status"]["devices"].push_back(status_conflict_entry_);
    it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  }
  json update = json::parse(body, nullptr, false);
  if (update.is_discarded() || !update.is_object() || !update.contains("metadata")) {
    return {400, StatusBody(400, "BadRequest", "the body is not a ResourceClaim"), ""};
  }
  const json& meta = update["metadata"];
  if (meta.value("uid", it->second["metadata"].value("uid", "")) != it->second["metadata"].value("uid", "")) {
    return {409, StatusBody(409, "Conflict", "Precondition failed: UID in precondition does not match"), ""};
  }
  if (meta.value("resourceVersion", "") != it->second["metadata"].value("resourceVersion", "")) {
    return {409, StatusBody(409, "Conflict",
                            "Operation cannot be fulfilled on resourceclaims.resource.k8s.io \"" + name +
                                "\": the object has been modified; please apply your changes to the latest "
                                "version and try again"),
            ""};
  }
  if (auto refused = CheckClaimStatusUpdate(it->second, update, status_grants_)) {
    return {refused->code, StatusBody(refused->code, refused->reason, refused->message), ""};
  }
  json devices = update.contains("status") ? update["status"].value("devices", json::array()) : json::array();
  if (devices.empty()) {
    if (it->second.contains("status")) it->second["status"].erase("devices");
  } else {
    it->second["status"]["devices"] = devices;
  }
  it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  return {200, it->second.dump(), ""};
}
void FakeApiServer::FailNext(int status, int count, std::string retry_after) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_status_ = status;
  fail_count_ = count;
  fail_retry_after_ = std::move(retry_after);
}
void FakeApiServer::HoldRequests(std::string path_prefix) {
  std::lock_guard<std::mutex> lock(hold_mu_);
  hold_prefix_ = std::move(path_prefix);
}
void FakeApiServer::ReleaseHeld() {
  std::lock_guard<std::mutex> lock(hold_mu_);
  hold_prefix_.clear();
  ++releases_;
  hold_cv_.notify_all();
}
bool FakeApiServer::WaitForHeld(int n, std::chrono::milliseconds bound) {
  std::unique_lock<std::mutex> lock(hold_mu_);
  return hold_cv_.wait_for(lock, bound, [&] { return held_ >= n; });
}
void FakeApiServer::HoldIfAsked(const std::string& target) {
  std::unique_lock<std::mutex> lock(hold_mu_);
  const std::string path = target.substr(0, target.find('?'));
  if (hold_prefix_.empty() || path.rfind(hold_prefix_, 0) != 0) return;
  const uint64_t release = releases_;
  ++held_;
  hold_cv_.notify_all();
  hold_cv_.wait(lock, [&] { return releases_ != release || stopping_; });
  --held_;
}
void FakeApiServer::FailNextFor(std::string path_prefix, int status, int count, std::string retry_after) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_path_ = std::move(path_prefix);
  fail_path_status_ = status;
  fail_path_count_ = count;
  fail_path_retry_after_ = std::move(retry_after);
}
void FakeApiServer::ConflictNextUpdates(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  conflicts_ = count;
}
void FakeApiServer::ExpireNextContinues(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  expire_continues_ = count;
}
void FakeApiServer::PutSliceV1(json slice) {
  std::lock_guard<std::mutex> lock(mu_);
  slice["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  const std::string name = slice["metadata"]["name"].get<std::string>();
  RecordLocked(slices_.count(name) != 0u ? "MODIFIED" : "ADDED", slice);
  slices_[name] = std::move(slice);
  AllocateLocked();
}

std::vector<json> FakeApiServer::Slices(const std::string& version) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> out;
  for (const auto& [name, s] : slices_) out.push_back(SliceInVersion(s, version));
  return out;
}
std::vector<std::string> FakeApiServer::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}
int FakeApiServer::CountRequests(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(requests_.begin(), requests_.end(),
                                        [&](const std::string& r) { return r.rfind(prefix, 0) == 0; }));
}

FakeApiServer::Response FakeApiServer::Handle(const std::string& method, const std::string& target,
                                              const std::map<std::string, std::string>& headers,
                                              const std::string& body) {
  std::lock_guard<std::mutex> lock(mu_);
  // After the answer is made, a change the request made gets the scheduler's pass (as the real
  // scheduler reacts to the watch event), before the lock goes.
  struct AllocateAfter {
    FakeApiServer* server;
    bool changes;
    ~AllocateAfter() {
      if (changes) server->AllocateLocked();
    }
  } allocate_after{this, method != "GET"};
  requests_.push_back(method + " " + target);
  if (!token_.empty()) {
    auto it = headers.find("authorization");
    if (it == headers.end() || it->second != "Bearer " + token_) {
      return {401, StatusBody(401, "Unauthorized", "Unauthorized"), ""};
    }
  }
  if (fail_count_ > 0) {
    --fail_count_;
    return {fail_status_, StatusBody(fail_status_, "TooManyRequests", "injected failure"), fail_retry_after_};
  }
  for (auto it = canned_.begin(); it != canned_.end(); ++it) {
    if ((method + " " + target).rfind(it->prefix, 0) != 0) continue;
    Response r{it->status, it->body, ""};
    if (--it->count <= 0) canned_.erase(it);
    return r;
  }
  std::string path = target.substr(0, target.find('?'));
  if (fail_path_count_ > 0 && path.rfind(fail_path_, 0) == 0) {
    --fail_path_count_;
    return {fail_path_status_, StatusBody(fail_path_status_, "TooManyRequests", "injected failure"),
            fail_path_retry_after_};
  }
  std::map<std::string, std::string> query;
  if (size_t q = target.find('?'); q != std::string::npos) {
    for (const auto& kv : Split(target.substr(q + 1), '&')) {
      size_t eq = kv.find('=');
      if (eq != std::string::npos) query[UrlDecode(kv.substr(0, eq))] = UrlDecode(kv.substr(eq + 1));
    }
  }
  std::vector<std::string> parts = Split(path, '/');  // "", "apis", "resource.k8s.io", ...
  if (path == "/apis/resource.k8s.io" && method == "GET") {
    json versions = json::array();
    if (serve_v1_) versions.push_back({{"groupVersion", "resource.k8s.io/v1"}, {"version", "v1"}});
    if (serve_v1beta1_) versions.push_back({{"groupVersion", "resource.k8s.io/v1beta1"}, {"version", "v1beta1"}});
    if (versions.empty()) return {404, StatusBody(404, "NotFound", "the server could not find the requested resource"), ""};
    return {200, json{{"kind", "APIGroup"}, {"apiVersion", "v1"}, {"name", "resource.k8s.io"},
                      {"versions", versions}, {"preferredVersion", versions[0]}}.dump(), ""};
  }
  if (parts.size() == 5 && parts[1] == "api" && parts[2] == "v1" && parts[3] == "nodes" && method == "GET") {
    auto it = nodes_.find(parts[4]);
    if (it == nodes_.end()) return {404, NotFoundBody("", "nodes", parts[4]), ""};
    return {200, json{{"kind", "Node"}, {"apiVersion", "v1"}, {"metadata", {{"name", it->first}, {"uid", it->second}}}}.dump(), ""};
  }
  if (parts.size() >= 5 && parts[1] == "apis" && parts[2] == "resource.k8s.io") {
    const std::string& version = parts[3];
    bool served = ServedLocked(version);
    if (!served) return {404, StatusBody(404, "NotFound", "the server could not find the requested resource"), ""};
    if (parts[4] == "resourceslices") {
      return HandleSlices(method, version, parts.size() > 5 ? parts[5] : "", query, body);
    }
    if (parts.size() == 9 && parts[4] == "namespaces" && parts[6] == "resourceclaims" &&
        parts[8] == "status" && method == "PUT") {
      Response r = HandleClaimStatus(parts[5] + "/" + parts[7], body);
      if (r.status == 200) {
        json c = json::parse(r.body);
        c["apiVersion"] = "resource.k8s.io/" + version;
        r.body = c.dump();
      }
      return r;
    }
    if (parts.size() == 8 && parts[4] == "namespaces" && parts[6] == "resourceclaims" && method == "GET") {
      auto it = claims_.find(parts[5] + "/" + parts[7]);
      if (it == claims_.end()) {
        return {404, NotFoundBody("resource.k8s.io", "resourceclaims", parts[7]), ""};
      }
      json c = it->second;
      c["apiVersion"] = "resource.k8s.io/" + version;
      return {200, c.dump(), ""};
    }
  }
  return {404, StatusBody(404, "NotFound", "the server could not find the requested resource"), ""};
}

FakeApiServer::Response FakeApiServer::HandleSlices(const std::string& method, const std::string& version,
                                                    const std::string& name,
                                                    const std::map<std::string, std::string>& query,
                                                    const std::string& body) {
  auto not_found = [&] {
    return Response{404, NotFoundBody("resource.k8s.io", "resourceslices", name), ""};
  };
  std::string node, driver;
  if (auto it = query.find("fieldSelector"); it != query.end() && name.empty()) {
    for (const auto& term : Split(it->second, ',')) {
      size_t eq = term.find('=');
      if (eq == std::string::npos) continue;
      if (term.substr(0, eq) == "spec.nodeName") node = term.substr(eq + 1);
      else if (term.substr(0, eq) == "spec.driver") driver = term.substr(eq + 1);
      else return {400, StatusBody(400, "BadRequest", "field label not supported: " + term.substr(0, eq)), ""};
    }
  }
  if (method == "GET" && name.empty() && (query.count("watch") != 0u) &&
      (query.at("watch") == "true" || query.at("watch") == "1")) {
    WatchSpec w{version, node, driver};
    if (auto it = query.find("resourceVersion"); it != query.end() && !it->second.empty() && it->second != "0") {
      try {
        w.from = std::stoll(it->second);
      } catch (const std::exception&) {
        return {400, StatusBody(400, "BadRequest", "invalid resourceVersion " + it->second), ""};
      }
    }
    if (auto it = query.find("timeoutSeconds"); it != query.end()) w.timeout_s = std::stoi(it->second);
    Response r;
    r.watch = w;
    return r;
  }
  if (method == "DELETE" && name.empty()) {  // DeleteCollection, as kubelet's cleanup
    json items = json::array();
    for (auto it = slices_.begin(); it != slices_.end();) {
      const json& sp = it->second["spec"];
      if ((!node.empty() && sp.value("nodeName", "") != node) || (!driver.empty() && sp.value("driver", "") != driver)) {
        ++it;
        continue;
      }
      items.push_back(SliceInVersion(it->second, version));
      RecordLocked("DELETED", it->second);
      it = slices_.erase(it);
    }
    return {200, json{{"kind", "ResourceSliceList"}, {"apiVersion", "resource.k8s.io/" + version},
                      {"metadata", json::object()}, {"items", items}}.dump(), ""};
  }
  if (method == "GET" && name.empty()) {
    size_t offset = 0;
    if (auto it = query.find("continue"); it != query.end() && !it->second.empty()) {
      if (expire_continues_ > 0) {
        --expire_continues_;
        return {410, StatusBody(410, "Expired", "The provided continue parameter is too old"), ""};
      }
      offset = std::stoul(it->second);
    }
    size_t limit = query.count("limit") ? std::stoul(query.at("limit")) : SIZE_MAX;
    std::vector<const json*> matching;
    for (const auto& [n, s] : slices_) {
      if (!node.empty() && s["spec"].value("nodeName", "") != node) continue;
      if (!driver.empty() && s["spec"].value("driver", "") != driver) continue;
      matching.push_back(&s);
    }
    json items = json::array();
    for (size_t i = offset; i < matching.size() && items.size() < limit; ++i) {
      items.push_back(SliceInVersion(*matching[i], version));
    }
    json meta = {{"resourceVersion", std::to_string(resource_version_)}};
    if (offset + items.size() < matching.size()) meta["continue"] = std::to_string(offset + items.size());
    return {200, json{{"kind", "ResourceSliceList"}, {"apiVersion", "resource.k8s.io/" + version},
                      {"metadata", meta}, {"items", items}}.dump(), ""};
  }
  if (method == "GET") {
    auto it = slices_.find(name);
    if (it == slices_.end()) return not_found();
    return {200, SliceInVersion(it->second, version).dump(), ""};
  }
  if (method == "DELETE") {
    auto it = slices_.find(name);
    if (it == slices_.end()) return not_found();
    json gone = SliceInVersion(it->second, version);
    RecordLocked("DELETED", it->second);
    slices_.erase(it);
    return {200, gone.dump(), ""};
  }
  if (method != "POST" && method != "PUT") return {405, StatusBody(405, "MethodNotAllowed", method), ""};

  json obj;
  try {
    obj = json::parse(body);
  } catch (const json::exception& e) {
    return {400, StatusBody(400, "BadRequest", e.what()), ""};
  }
  // Validation the real server does (the parts our client could get wrong).
  if (obj.value("apiVersion", "") != "resource.k8s.io/" + version || obj.value("kind", "") != "ResourceSlice") {
    return {400, StatusBody(400, "BadRequest", "wrong apiVersion or kind"), ""};
  }
  json& devices = obj["spec"]["devices"];
  if (!devices.is_array()) devices = json::array();
  bool tainted = false;
  for (auto& d : devices) {
    bool has_basic = d.contains("basic");
    if ((version == "v1beta1") != has_basic) {
      return {422, StatusBody(422, "Invalid", "spec.devices: device \"" + d.value("name", "") +
                                                  "\" is not in the " + version + " shape"), ""};
    }
    if (version == "v1beta1") d = DeviceToV1(d);
    size_t n = d.value("attributes", json::object()).size() + d.value("capacity", json::object()).size();
    if (n > 32) return {422, StatusBody(422, "Invalid", "spec.devices: more than 32 attributes and capacities"), ""};
    const json attributes = d.value("attributes", json::object());  // a range-for over
    for (const auto& [k, v] : attributes.items()) {  // value(...).items() reads a dead temporary
      if (v.contains("string") && v["string"].get<std::string>().size() > 64) {
        return {422, StatusBody(422, "Invalid", "attribute " + k + ": longer than 64"), ""};
      }
    }
    if (!options_.device_taints) d.erase("taints");
    if (!options_.device_binding_conditions) {
      for (const char* f : {"bindingConditions", "bindingFailureConditions", "bindsToNode"}) d.erase(f);
    }
    if (!options_.consumable_capacity) {
      d.erase("allowMultipleAllocations");
      if (d.contains("capacity")) for (auto& [k, c] : d["capacity"].items()) c.erase("requestPolicy");
    }
    tainted |= d.contains("taints");
  }
  if (devices.size() > (tainted ? 64u : 128u)) {
    return {422, StatusBody(422, "Invalid", "spec.devices: too many devices"), ""};
  }
  if (std::string invalid = ValidateSlice(obj); !invalid.empty()) {
    return {422, StatusBody(422, "Invalid", "ResourceSlice.resource.k8s.io \"" + obj["metadata"].value("name", "") +
                                                "\" is invalid: " + invalid), ""};
  }
  obj["apiVersion"] = "resource.k8s.io/v1";
  const std::string obj_name = obj["metadata"].value("name", "");
  if (method == "POST") {
    if (slices_.count(obj_name)) {
      return {409, StatusBody(409, "AlreadyExists", "resourceslices.resource.k8s.io \"" + obj_name + "\" already exists"), ""};
    }
    obj["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    obj["metadata"]["uid"] = "uid-" + obj_name;
    slices_[obj_name] = obj;
    RecordLocked("ADDED", obj);
    CollectGarbageLocked();
    return {201, SliceInVersion(obj, version).dump(), ""};
  }
  auto it = slices_.find(name);
  if (it == slices_.end()) return not_found();
  if (conflicts_ > 0) {  // another writer got there first
    --conflicts_;
    it->second["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    RecordLocked("MODIFIED", it->second);
  }
  if (obj["metadata"].value("resourceVersion", "") != it->second["metadata"].value("resourceVersion", "")) {
    return {409, StatusBody(409, "Conflict", "Operation cannot be fulfilled on resourceslices.resource.k8s.io \"" +
                                                 name + "\": the object has been modified; please apply your "
                                                        "changes to the latest version and try again"), ""};
  }
  obj["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
  obj["metadata"]["uid"] = it->second["metadata"].value("uid", "");
  it->second = obj;
  RecordLocked("MODIFIED", obj);
  CollectGarbageLocked();
  return {200, SliceInVersion(obj, version).dump(), ""};
}

TestCertificate MakeSelfSignedCertificate() {
  TestCertificate out;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("fake-apiserver"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                            std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  out.cert_pem.assign(data, static_cast<size_t>(n));
  BIO_free(b);
  b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  n = BIO_get_mem_data(b, &data);
  out.key_pem.assign(data, static_cast<size_t>(n));
  BIO_free(b);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace rdmak8s::testing
