#include "rdmak8s/netlink/dcb_codec.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>

namespace rdmak8s::dcb {
namespace {

nl::MessageBuilder Start(uint16_t type, uint8_t cmd, uint32_t seq, std::string_view netdev) {
  nl::MessageBuilder b(type, NLM_F_REQUEST | NLM_F_ACK, seq);
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = cmd;
  b.AppendHeader(&d, sizeof(d));
  b.PutString(DCB_ATTR_IFNAME, netdev);
  return b;
}

bool IsIeeeSelector(uint8_t sel) {
  return sel >= IEEE_8021QAZ_APP_SEL_ETHERTYPE && sel <= IEEE_8021QAZ_APP_SEL_DSCP;
}

// The attribute type of an APP or trust entry: IEEE selectors travel as DCB_ATTR_IEEE_APP,
// the others (PCP) as DCB_ATTR_DCB_APP (dcbnl_app_attr_type_get in net/dcb/dcbnl.c).
uint16_t AppAttrType(uint8_t sel) {
  return IsIeeeSelector(sel) ? uint16_t{DCB_ATTR_IEEE_APP} : kDcbAttrDcbApp;
}

StatusOr<std::vector<nl::Attr>> Body(const nl::Message& m, std::string_view what) {
  if (m.payload.size() < sizeof(dcbmsg)) {
    return InvalidArgumentError(std::string(what) + ": reply shorter than struct dcbmsg");
  }
  auto attrs = nl::ParseAttrs(m.payload.subspan(NLMSG_ALIGN(sizeof(dcbmsg))));
  if (!attrs.ok()) return attrs.status().Prepend(what);
  return attrs;
}

}  // namespace

std::vector<uint8_t> BuildIeeeGet(uint32_t seq, std::string_view netdev) {
  return Start(RTM_GETDCB, DCB_CMD_IEEE_GET, seq, netdev).Finish();
}

std::vector<uint8_t> BuildSetPfc(uint32_t seq, std::string_view netdev, const ieee_pfc& pfc) {
  nl::MessageBuilder b = Start(RTM_SETDCB, DCB_CMD_IEEE_SET, seq, netdev);
  size_t ieee = b.BeginNested(DCB_ATTR_IEEE);
  b.PutBytes(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  b.EndNested(ieee);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildAppChange(uint32_t seq, std::string_view netdev,
                                    const std::vector<DcbAppEntry>& entries, bool del) {
  nl::MessageBuilder b =
      Start(RTM_SETDCB, del ? DCB_CMD_IEEE_DEL : DCB_CMD_IEEE_SET, seq, netdev);
  size_t ieee = b.BeginNested(DCB_ATTR_IEEE);
  size_t table = b.BeginNested(DCB_ATTR_IEEE_APP_TABLE);
  for (const DcbAppEntry& e : entries) {
    dcb_app app{};
    app.selector = e.selector;
    app.priority = e.priority;
    app.protocol = e.protocol;
    b.PutBytes(AppAttrType(e.selector), &app, sizeof(app));
  }
  b.EndNested(table);
  b.EndNested(ieee);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildSetTrust(uint32_t seq, std::string_view netdev,
                                   const std::vector<uint8_t>& selectors) {
  nl::MessageBuilder b = Start(RTM_SETDCB, DCB_CMD_IEEE_SET, seq, netdev);
  size_t ieee = b.BeginNested(DCB_ATTR_IEEE);
  size_t table = b.BeginNested(kDcbAttrDcbAppTrustTable);
  for (uint8_t sel : selectors) {
    b.PutU8(AppAttrType(sel), sel);
  }
  b.EndNested(table);
  b.EndNested(ieee);
  return std::move(b).Finish();
}

StatusOr<IeeeState> ParseIeeeGet(const nl::Message& m) {
  constexpr std::string_view kWhat = "DCB_CMD_IEEE_GET reply";
  if (m.type != RTM_GETDCB) return InvalidArgumentError(std::string(kWhat) + ": not RTM_GETDCB");
  RDMAK8S_ASSIGN_OR_RETURN(auto top, Body(m, kWhat));
  IeeeState st;
  const nl::Attr* ieee = nl::FindAttr(top, DCB_ATTR_IEEE);
  if (ieee == nullptr) return st;  // a driver with no IEEE ops at all
  RDMAK8S_ASSIGN_OR_RETURN(auto inner, nl::ParseAttrs(ieee->payload));
  if (const nl::Attr* pfc = nl::FindAttr(inner, DCB_ATTR_IEEE_PFC)) {
    if (pfc->payload.size() < sizeof(ieee_pfc)) {
      return InvalidArgumentError(std::string(kWhat) + ": DCB_ATTR_IEEE_PFC is " +
                                  std::to_string(pfc->payload.size()) + " bytes, want " +
                                  std::to_string(sizeof(ieee_pfc)));
    }
    ieee_pfc p;
    std::memcpy(&p, pfc->payload.data(), sizeof(p));
    st.pfc = p;
  }
  if (const nl::Attr* table = nl::FindAttr(inner, DCB_ATTR_IEEE_APP_TABLE)) {
    RDMAK8S_ASSIGN_OR_RETURN(auto apps, nl::ParseAttrs(table->payload));
    for (const nl::Attr& a : apps) {
      if (a.type != DCB_ATTR_IEEE_APP && a.type != kDcbAttrDcbApp) continue;
      if (a.payload.size() < sizeof(dcb_app)) {
        return InvalidArgumentError(std::string(kWhat) + ": short APP entry");
      }
      dcb_app app;
      std::memcpy(&app, a.payload.data(), sizeof(app));
      st.app.push_back(DcbAppEntry{app.selector, app.protocol, app.priority});
    }
  }
  if (const nl::Attr* trust = nl::FindAttr(inner, kDcbAttrDcbAppTrustTable)) {
    RDMAK8S_ASSIGN_OR_RETURN(auto sels, nl::ParseAttrs(trust->payload));
    std::vector<uint8_t> out;
    for (const nl::Attr& a : sels) {
      if (auto v = a.U8()) out.push_back(*v);
    }
    st.trust = std::move(out);
  }
  return st;
}

Status ParseSetReply(const nl::Message& m, std::string_view what) {
  if (m.type != RTM_SETDCB) return InvalidArgumentError(std::string(what) + ": not RTM_SETDCB");
  RDMAK8S_ASSIGN_OR_RETURN(auto top, Body(m, what));
  const nl::Attr* ieee = nl::FindAttr(top, DCB_ATTR_IEEE);
  if (ieee == nullptr || !ieee->U8()) {
    return InvalidArgumentError(std::string(what) + ": reply without a DCB_ATTR_IEEE status");
  }
  // dcbnl_ieee_set/del: nla_put_u8(skb, DCB_ATTR_IEEE, err), err being 0 or -errno.
  int err = -static_cast<int8_t>(*ieee->U8());
  if (err == 0) return Status::Ok();
  return ErrnoError(err, what);
}

std::vector<uint8_t> TrustSelectors(DcbTrust trust) {
  if (trust == DcbTrust::kDscp) return {IEEE_8021QAZ_APP_SEL_DSCP, kDcbAppSelPcp};
  return {kDcbAppSelPcp};
}

StatusOr<DcbTrust> TrustFromSelectors(const std::vector<uint8_t>& selectors) {
  if (!selectors.empty() && selectors[0] == IEEE_8021QAZ_APP_SEL_DSCP) return DcbTrust::kDscp;
  if (!selectors.empty() && selectors[0] == kDcbAppSelPcp) return DcbTrust::kPcp;
  std::string list;
  for (uint8_t s : selectors) list += (list.empty() ? "" : ",") + std::to_string(s);
  return FailedPreconditionError("APP trust table [" + list +
                                 "] trusts neither DSCP nor PCP first");
}

}  // namespace rdmak8s::dcb
