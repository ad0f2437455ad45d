// The RoCE v2 GID of an IP address, as the kernel fills a port's GID table and prints it in
// sysfs (class/infiniband/<dev>/ports/<n>/gids/<i>): an IPv6 address as it is, an IPv4 address
// as its IPv4-mapped IPv6 form (::ffff:a.b.c.d; drivers/infiniband/core/roce_gid_mgmt.c), in
// 8 groups of 4 lower-case hex digits. One rule for the CNI (which waits for a pod's GIDs) and the
// node check (which looks for each address's GID).
#pragma once

#include <string>

namespace rdmak8s {

// Parses a GID as sysfs prints it into 16 bytes; false if malformed.
bool ParseGid(const std::string& text, unsigned char out[16]);
// The RoCE v2 GID text of an IP ("10.0.0.2" -> "0000:...:ffff:0a00:0002"); "" if not an IP.
std::string GidForIp(const std::string& ip);

}  // namespace rdmak8s
