// RdmaNetlink over NETLINK_RDMA (RDMA_NL_NLDEV): bytes from rdma_nl_codec, I/O through
// NetlinkChannel.
#include "rdmak8s/netlink/rdma_netlink.h"

#include <linux/netlink.h>

#include "netlink/netlink_channel.h"
#include "rdmak8s/netlink/rdma_nl_codec.h"

namespace rdmak8s {

std::string_view RdmaNetnsModeName(RdmaNetnsMode m) {
  return m == RdmaNetnsMode::kShared ? "shared" : "exclusive";
}

namespace {

using internal::NetlinkChannel;

// IB_DEVICE_NAME_MAX (include/rdma/ib_verbs.h), NUL included.
constexpr size_t kRdmaDevNameMax = 64;

class ChannelRdmaNetlink : public RdmaNetlink {
 public:
  explicit ChannelRdmaNetlink(std::unique_ptr<NetlinkChannel> ch) : ch_(std::move(ch)) {}

  StatusOr<std::vector<RdmaLinkInfo>> ListDevices() override {
    std::vector<RdmaLinkInfo> out;
    RDMAK8S_RETURN_IF_ERROR(ch_->Transact(
        rdma_nl::BuildGetDump(0),
        [&](const nl::Message& m) -> Status {
          RDMAK8S_ASSIGN_OR_RETURN(auto d, rdma_nl::ParseDevice(m));
          out.push_back(std::move(d));
          return Status::Ok();
        },
        "list RDMA devices"));
    return out;
  }

  StatusOr<RdmaNetnsMode> GetNetnsMode() override {
    std::vector<StatusOr<RdmaNetnsMode>> replies;
    RDMAK8S_RETURN_IF_ERROR(ch_->Transact(
        rdma_nl::BuildSysGet(0),
        [&](const nl::Message& m) -> Status {
          replies.push_back(rdma_nl::ParseSysGet(m));
          return Status::Ok();
        },
        "get RDMA netns mode"));
    if (replies.empty()) return InternalError("get RDMA netns mode: the kernel sent no answer");
    return replies.front();
  }

  Status SetNetnsMode(RdmaNetnsMode mode) override {
    return ch_->Transact(
        rdma_nl::BuildSysSetNetnsMode(0, mode), [](const nl::Message&) { return Status::Ok(); },
        "set RDMA netns mode " + std::string(RdmaNetnsModeName(mode)));
  }

  Status MoveToNetns(std::string_view rdma_dev, int netns_fd) override {
    const std::string what = "move RDMA device " + std::string(rdma_dev) + " to netns fd " +
                             std::to_string(netns_fd);
    if (netns_fd < 0) return InvalidArgumentError(what + ": bad netns fd");
    RDMAK8S_ASSIGN_OR_RETURN(RdmaLinkInfo d, Find(rdma_dev, what));
    Status s = ch_->Transact(
        rdma_nl::BuildSetNetns(0, d.index, static_cast<uint32_t>(netns_fd)),
        [](const nl::Message&) { return Status::Ok(); }, what);
    if (s.ok()) return s;
    return rdma_nl::ClassifyMoveError(s, GetNetnsMode());
  }

  Status Rename(std::string_view rdma_dev, std::string_view new_name) override {
    const std::string what =
        "rename RDMA device " + std::string(rdma_dev) + " to " + std::string(new_name);
    if (new_name.empty() || new_name.size() >= kRdmaDevNameMax ||
        new_name.find('/') != std::string_view::npos) {
      return InvalidArgumentError(what + ": bad RDMA device name");
    }
    RDMAK8S_ASSIGN_OR_RETURN(RdmaLinkInfo d, Find(rdma_dev, what));
    return ch_->Transact(
        rdma_nl::BuildRename(0, d.index, new_name),
        [](const nl::Message&) { return Status::Ok(); }, what);
  }

 private:
  // nldev SET takes an index: resolve the name through a GET dump.
  StatusOr<RdmaLinkInfo> Find(std::string_view rdma_dev, const std::string& what) {
    auto devs = ListDevices();
    if (!devs.ok()) return devs.status().Prepend(what);
    for (auto& d : *devs) {
      if (d.name == rdma_dev) return d;
    }
    return NotFoundError(what + ": no RDMA device " + std::string(rdma_dev) + " in this netns");
  }

  std::unique_ptr<NetlinkChannel> ch_;
};

}  // namespace

StatusOr<std::unique_ptr<RdmaNetlink>> NewRdmaNetlink() {
  RDMAK8S_ASSIGN_OR_RETURN(auto ch, NetlinkChannel::Open(NETLINK_RDMA, "RDMA netlink"));
  return std::unique_ptr<RdmaNetlink>(new ChannelRdmaNetlink(std::move(ch)));
}

}  // namespace rdmak8s
