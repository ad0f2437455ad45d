// How many connections are open to a unix socket we listen on, read from /proc/net/unix: whether
// kubelet still holds the connection it dialled back on inside Register.
#pragma once

#include <string>
#include <string_view>

#include "rdmak8s/base/status.h"

namespace rdmak8s::dp {

// Connected sockets in `proc_net_unix` (the text of /proc/net/unix, Linux net/unix/af_unix.c
// unix_seq_show: "Num RefCount Protocol Flags Type St Inode Path") whose address is `bound_path`:
// the connections accepted on the listener bound there (an accepted unix socket carries its
// listener's address; the listener itself, flagged __SO_ACCEPTCON 00010000, is not counted). A
// path is compared whole, runs of '/' as one (gRPC binds "unix:///x" as "///x"); a line that does
// not parse is skipped.
int CountAcceptedConnections(std::string_view proc_net_unix, std::string_view bound_path);

// CountAcceptedConnections over `proc_root`/net/unix (at most 64 MiB). Errors name the file.
StatusOr<int> AcceptedConnections(const std::string& bound_path, const std::string& proc_root = "/proc");

}  // namespace rdmak8s::dp
