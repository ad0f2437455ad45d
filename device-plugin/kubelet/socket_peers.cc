// Connections open to a unix socket we listen on, from /proc/net/unix (socket_peers.h).
#include "device-plugin/kubelet/socket_peers.h"

#include <cstdint>
#include <sstream>

#include "rdmak8s/base/file_util.h"

namespace rdmak8s::dp {

namespace {

constexpr unsigned long kAcceptCon = 0x10000;  // __SO_ACCEPTCON: a listener
constexpr unsigned kConnected = 3;             // SS_CONNECTED

// `path` with every run of '/' made one: gRPC binds "unix:///x" as "///x", and that is the
// address the kernel keeps.
std::string CollapseSlashes(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  return out;
}

}  // namespace

int CountAcceptedConnections(std::string_view proc_net_unix, std::string_view bound_path) {
  const std::string want = CollapseSlashes(bound_path);
  int count = 0;
  std::istringstream lines{std::string(proc_net_unix)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string num;
    unsigned long refcount = 0, protocol = 0, flags = 0, type = 0, st = 0, inode = 0;
    if (!(fields >> num >> std::hex >> refcount >> protocol >> flags >> type >> st >> std::dec >> inode)) continue;
    std::string path;
    std::getline(fields >> std::ws, path);  // the rest: a path may hold spaces
    if (path.empty() || CollapseSlashes(path) != want) continue;
    if ((flags & kAcceptCon) == 0 && st == kConnected) count++;
  }
  return count;
}

StatusOr<int> AcceptedConnections(const std::string& bound_path, const std::string& proc_root) {
  const std::string path = proc_root + "/net/unix";
  auto text = ReadRegularFile(path, size_t{64} << 20, FileLinks::kFollow);
  if (!text.ok()) return text.status().Prepend("read " + path);
  return CountAcceptedConnections(*text, bound_path);
}

}  // namespace rdmak8s::dp
