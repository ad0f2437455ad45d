// Pure encoding/decoding of IEEE DCB messages over rtnetlink (include/uapi/linux/dcbnl.h,
// net/dcb/dcbnl.c; the layouts iproute2's `dcb pfc`, `dcb app` and `dcb apptrust` use). No
// sockets: ChannelDcbNetlink carries these bytes. Tested on bytes.
//
// Request: struct nlmsghdr (RTM_GETDCB / RTM_SETDCB), struct dcbmsg {AF_UNSPEC, cmd, pad},
// DCB_ATTR_IFNAME, and for sets DCB_ATTR_IEEE { DCB_ATTR_IEEE_PFC (struct ieee_pfc) |
// DCB_ATTR_IEEE_APP_TABLE { DCB_ATTR_IEEE_APP (struct dcb_app) ... } |
// DCB_ATTR_DCB_APP_TRUST_TABLE { u8 selector ... } }.
// A set's reply carries the driver's result as a u8 (a negative errno, truncated) in
// DCB_ATTR_IEEE: ParseSetReply turns it back into a Status.
#pragma once

#include <linux/dcbnl.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/dcb_netlink.h"
#include "rdmak8s/netlink/netlink_codec.h"

namespace rdmak8s::dcb {

// Linux 6.4+ uapi (include/uapi/linux/dcbnl.h) that Debian 12's linux-libc-dev (6.1) lacks;
// named as in the kernel, values are ABI.
inline constexpr uint16_t kDcbAttrDcbAppTrustTable = 11;  // DCB_ATTR_DCB_APP_TRUST_TABLE
inline constexpr uint16_t kDcbAttrDcbApp = 2;             // DCB_ATTR_DCB_APP (enum ieee_attrs_app)

// DCB_CMD_IEEE_GET for one netdev (NLM_F_ACK).
std::vector<uint8_t> BuildIeeeGet(uint32_t seq, std::string_view netdev);
// DCB_CMD_IEEE_SET with DCB_ATTR_IEEE_PFC carrying `pfc` whole (the kernel sets every field).
std::vector<uint8_t> BuildSetPfc(uint32_t seq, std::string_view netdev, const ieee_pfc& pfc);
// DCB_CMD_IEEE_SET (add) or DCB_CMD_IEEE_DEL (del) with DCB_ATTR_IEEE_APP_TABLE. Entries with an
// IEEE selector (1..5) go as DCB_ATTR_IEEE_APP, others (PCP, 255) as DCB_ATTR_DCB_APP.
std::vector<uint8_t> BuildAppChange(uint32_t seq, std::string_view netdev,
                                    const std::vector<DcbAppEntry>& entries, bool del);
// DCB_CMD_IEEE_SET with DCB_ATTR_DCB_APP_TRUST_TABLE listing `selectors` in trust order.
std::vector<uint8_t> BuildSetTrust(uint32_t seq, std::string_view netdev,
                                   const std::vector<uint8_t>& selectors);

// What a DCB_CMD_IEEE_GET reply says. A member is empty when the driver does not report it
// (no ieee_getpfc, no getapptrust or a kernel before 6.4).
struct IeeeState {
  std::optional<ieee_pfc> pfc;
  std::vector<DcbAppEntry> app;
  std::optional<std::vector<uint8_t>> trust;  // selectors, in trust order
};
StatusOr<IeeeState> ParseIeeeGet(const nl::Message& m);

// The status of a DCB_CMD_IEEE_SET / DCB_CMD_IEEE_DEL reply (OK, or the driver's errno mapped
// by ErrnoError with `what` prepended).
Status ParseSetReply(const nl::Message& m, std::string_view what);

// Trust selectors <-> DcbTrust: kDscp is [DSCP, PCP] (DSCP first, PCP for non-IP traffic), kPcp
// is [PCP]. A table whose first selector is DSCP reads as kDscp, PCP as kPcp; anything else
// (empty, other selectors) is kFailedPrecondition naming the selectors.
std::vector<uint8_t> TrustSelectors(DcbTrust trust);
StatusOr<DcbTrust> TrustFromSelectors(const std::vector<uint8_t>& selectors);

}  // namespace rdmak8s::dcb
