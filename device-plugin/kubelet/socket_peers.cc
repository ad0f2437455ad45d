// Connections open to a unix socket we listen on, from /proc/net/unix (socket_peers.h).
#include "device-plugin/kubelet/socket_peers.h"

#include <cstdint>
#include <sstream>

#include "rdmak8s/file_util.h"

namespace rdmak8s::dp {

namespace {

constexpr unsigned long kAcceptCon = 0x10000;  // __SO_ACCEPTCON: a listener
constexpr unsigned kConnected = 3;             // SS_CONNECTED

}  // namespace

int CountAcceptedConnections(std::string_view proc_net_unix, std::string_view bound_path) {
  int count = 0;
  size_t pos = 0;
  while (pos < proc_net_unix.size()) {
    size_t end = proc_net_unix.find('\n', pos);
    if (end == std::string_view::npos) end = proc_net_unix.size();
    std::string_view line = proc_net_unix.substr(pos, end - pos);
    pos = end + 1;
    // The path is the last field and may not contain a space we could split on reliably: match
    // it as the line's tail, then parse the fields before it.
    if (line.size() <= bound_path.size() || !line.ends_with(bound_path) ||
        line[line.size() - bound_path.size() - 1] != ' ') {
      continue;
    }
    std::istringstream fields(std::string(line.substr(0, line.size() - bound_path.size())));
    std::string num;
    unsigned long refcount = 0, protocol = 0, flags = 0, type = 0, st = 0, inode = 0;
    if (!(fields >> num >> std::hex >> refcount >> protocol >> flags >> type >> st >> std::dec >> inode)) continue;
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
