// DcbNetlink over rtnetlink: bytes from dcb_codec, I/O through NetlinkChannel.
#include "rdmak8s/netlink/dcb_netlink.h"

#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "netlink/netlink_channel.h"
#include "rdmak8s/netlink/dcb_codec.h"

namespace rdmak8s {
namespace {

using internal::NetlinkChannel;

class ChannelDcbNetlink : public DcbNetlink {
 public:
  explicit ChannelDcbNetlink(std::unique_ptr<NetlinkChannel> ch) : ch_(std::move(ch)) {}

  StatusOr<PfcState> GetPfc(std::string_view netdev) override {
    const std::string what = "get PFC on " + std::string(netdev);
    RDMAK8S_ASSIGN_OR_RETURN(auto st, Get(netdev, what));
    if (!st.pfc) return UnimplementedError(what + ": the driver reports no IEEE PFC");
    return PfcState{st.pfc->pfc_cap, st.pfc->pfc_en, st.pfc->delay};
  }

  Status SetPfcEnabled(std::string_view netdev, uint8_t enabled_mask) override {
    const std::string what = "set PFC on " + std::string(netdev);
    // ieee_setpfc takes the whole struct: keep the driver's pfc_cap, mbc and delay.
    RDMAK8S_ASSIGN_OR_RETURN(auto st, Get(netdev, what));
    if (!st.pfc) return UnimplementedError(what + ": the driver reports no IEEE PFC");
    ieee_pfc pfc = *st.pfc;
    pfc.pfc_en = enabled_mask;
    return Set(dcb::BuildSetPfc(0, netdev, pfc), what);
  }

  StatusOr<std::vector<DcbAppEntry>> GetApp(std::string_view netdev) override {
    RDMAK8S_ASSIGN_OR_RETURN(auto st, Get(netdev, "get APP table of " + std::string(netdev)));
    return st.app;
  }

  Status AddApp(std::string_view netdev, const std::vector<DcbAppEntry>& entries) override {
    const std::string what = "add APP entries on " + std::string(netdev);
    RDMAK8S_RETURN_IF_ERROR(CheckName(netdev, what));
    if (entries.empty()) return Status::Ok();
    return Set(dcb::BuildAppChange(0, netdev, entries, /*del=*/false), what);
  }

  Status DelApp(std::string_view netdev, const std::vector<DcbAppEntry>& entries) override {
    const std::string what = "delete APP entries on " + std::string(netdev);
    RDMAK8S_RETURN_IF_ERROR(CheckName(netdev, what));
    if (entries.empty()) return Status::Ok();
    return Set(dcb::BuildAppChange(0, netdev, entries, /*del=*/true), what);
  }

  StatusOr<DcbTrust> GetTrust(std::string_view netdev) override {
    const std::string what = "get APP trust of " + std::string(netdev);
    RDMAK8S_ASSIGN_OR_RETURN(auto st, Get(netdev, what));
    if (!st.trust) return NoTrustTable(what);
    auto t = dcb::TrustFromSelectors(*st.trust);
    if (!t.ok()) return t.status().Prepend(what);
    return t;
  }

  Status SetTrust(std::string_view netdev, DcbTrust trust) override {
    const std::string what = "set APP trust of " + std::string(netdev);
    // A kernel before 6.4 ignores the unknown trust attribute and answers success: only set
    // what the GET shows exists.
    RDMAK8S_ASSIGN_OR_RETURN(auto st, Get(netdev, what));
    if (!st.trust) return NoTrustTable(what);
    return Set(dcb::BuildSetTrust(0, netdev, dcb::TrustSelectors(trust)), what);
  }

 private:
  static Status CheckName(std::string_view netdev, const std::string& what) {
    if (netdev.empty() || netdev.size() >= IFNAMSIZ) {
      return InvalidArgumentError(what + ": bad interface name '" + std::string(netdev) + "'");
    }
    return Status::Ok();
  }
  static Status NoTrustTable(const std::string& what) {
    return UnimplementedError(what +
                              ": no APP trust table (driver without apptrust, or Linux < 6.4)");
  }

  StatusOr<dcb::IeeeState> Get(std::string_view netdev, const std::string& what) {
    RDMAK8S_RETURN_IF_ERROR(CheckName(netdev, what));
    std::vector<StatusOr<dcb::IeeeState>> replies;
    RDMAK8S_RETURN_IF_ERROR(ch_->Transact(
        dcb::BuildIeeeGet(0, netdev),
        [&](const nl::Message& m) -> Status {
          if (m.type == RTM_GETDCB) replies.push_back(dcb::ParseIeeeGet(m));
          return Status::Ok();
        },
        what));
    if (replies.empty()) return InternalError(what + ": the kernel answered without DCB state");
    if (!replies.front().ok()) return replies.front().status().Prepend(what);
    return std::move(replies.front());
  }

  Status Set(std::vector<uint8_t> request, const std::string& what) {
    return ch_->Transact(
        std::move(request),
        [&](const nl::Message& m) -> Status {
          if (m.type != RTM_SETDCB) return Status::Ok();
          return dcb::ParseSetReply(m, what);
        },
        what);
  }

  std::unique_ptr<NetlinkChannel> ch_;
};

}  // namespace

StatusOr<std::unique_ptr<DcbNetlink>> NewDcbNetlink() {
  RDMAK8S_ASSIGN_OR_RETURN(auto ch, NetlinkChannel::Open(NETLINK_ROUTE, "rtnetlink (DCB)"));
  return std::unique_ptr<DcbNetlink>(new ChannelDcbNetlink(std::move(ch)));
}

}  // namespace rdmak8s
