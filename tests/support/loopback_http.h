// A plain HTTP/1.1 client on 127.0.0.1 for the tests and benchmarks of our HTTP servers
// (/metrics, /livez, /readyz): connect, send one request, read the whole answer.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace rdmak8s::testing {

// A connected socket to 127.0.0.1:`port` whose reads give up after `recv_timeout` (a failure
// bound, never a pass criterion); -1 when nothing listens.
inline int ConnectLoopback(int port, std::chrono::seconds recv_timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(recv_timeout.count());
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends "<method> <path> HTTP/1.1" with a Host header and nothing else.
inline void SendRequest(int fd, const std::string& path, const std::string& method = "GET") {
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
}

// Everything the server sends until it closes (or the read timeout ends it).
inline std::string ReadUntilClosed(int fd) {
  std::string out;
  std::array<char, 65536> buf{};
  ssize_t n = 0;
  while ((n = ::read(fd, buf.data(), buf.size())) > 0) out.append(buf.data(), static_cast<size_t>(n));
  return out;
}

// One request; the whole answer (status line, headers, body); "" when nothing listens, the
// server closed first or gave no answer within `recv_timeout`.
inline std::string HttpRequest(int port, const std::string& path, const std::string& method = "GET",
                               std::chrono::seconds recv_timeout = std::chrono::seconds(20)) {
  const int fd = ConnectLoopback(port, recv_timeout);
  if (fd < 0) return "";
  SendRequest(fd, path, method);
  std::string out = ReadUntilClosed(fd);
  ::close(fd);
  return out;
}

inline std::string StatusLine(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

inline std::string Body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

}  // namespace rdmak8s::testing
