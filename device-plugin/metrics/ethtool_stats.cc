#include "device-plugin/metrics/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace rdmak8s::dp {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status Ioctl(int fd, const std::string& netdev, void* data, const char* what) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, netdev.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = static_cast<char*>(data);
  if (ioctl(fd, SIOCETHTOOL, &ifr) != 0) {
    int err = errno;
    return ErrnoError(err, std::string("ethtool ") + what + " " + netdev);
  }
  return Status::Ok();
}

// ETHTOOL_GSSET_INFO for ETH_SS_STATS: how many statistics the driver has now.
StatusOr<uint32_t> CountStats(int fd, const std::string& netdev) {
  // ethtool_sset_info ends in a flexible array: one u32 per set asked for.
  alignas(ethtool_sset_info) uint8_t buf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* info = reinterpret_cast<ethtool_sset_info*>(buf);
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  RDMAK8S_RETURN_IF_ERROR(Ioctl(fd, netdev, info, "GSSET_INFO"));
  if ((info->sset_mask & (1ULL << ETH_SS_STATS)) == 0) return 0u;
  return info->data[0];
}

}  // namespace

StatusOr<NamedStats> IoctlEthtoolStats::Read(const std::string& netdev) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) {
    return InvalidArgumentError("ethtool: bad netdev name \"" + netdev + "\"");
  }
  Fd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return ErrnoError(errno, "ethtool: socket");
  // GSTRINGS and GSTATS write as many entries as the driver has at that moment, whatever count
  // we pass (net/ethtool/ioctl.c), and the count changes with the channel count (mlx5 has
  // per-channel statistics). So the buffers get room to spare, and a count that moved between
  // the calls is read again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    RDMAK8S_ASSIGN_OR_RETURN(uint32_t n, CountStats(fd.get(), netdev));
    if (n == 0) return UnimplementedError("ethtool " + netdev + ": the driver has no statistics");
    const uint32_t room = 2 * n + 256;
    auto strings = std::make_unique<uint8_t[]>(sizeof(ethtool_gstrings) + size_t{room} * ETH_GSTRING_LEN);
    auto* gs = reinterpret_cast<ethtool_gstrings*>(strings.get());
    gs->cmd = ETHTOOL_GSTRINGS;
    gs->string_set = ETH_SS_STATS;
    gs->len = n;
    RDMAK8S_RETURN_IF_ERROR(Ioctl(fd.get(), netdev, gs, "GSTRINGS"));
    auto values = std::make_unique<uint8_t[]>(sizeof(ethtool_stats) + size_t{room} * sizeof(uint64_t));
    auto* st = reinterpret_cast<ethtool_stats*>(values.get());
    st->cmd = ETHTOOL_GSTATS;
    st->n_stats = n;
    RDMAK8S_RETURN_IF_ERROR(Ioctl(fd.get(), netdev, st, "GSTATS"));
    if (gs->len != st->n_stats || gs->len > room) continue;  // the set changed in between
    NamedStats out;
    out.reserve(gs->len);
    for (uint32_t i = 0; i < gs->len; ++i) {
      const char* name = reinterpret_cast<const char*>(gs->data + size_t{i} * ETH_GSTRING_LEN);
      out.emplace_back(std::string(name, strnlen(name, ETH_GSTRING_LEN)), st->data[i]);
    }
    return out;
  }
  return UnavailableError("ethtool " + netdev + ": the statistics kept changing while read");
}

}  // namespace rdmak8s::dp
