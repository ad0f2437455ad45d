// IEEE DCB codec, checked against bytes derived by hand from include/uapi/linux/dcbnl.h and
// include/uapi/linux/rtnetlink.h (RTM_GETDCB 78, RTM_SETDCB 79; DCB_CMD_IEEE_SET 20, _GET 21,
// _DEL 27; DCB_ATTR_IFNAME 1, DCB_ATTR_IEEE 13; DCB_ATTR_IEEE_PFC 2, _APP_TABLE 3,
// DCB_ATTR_DCB_APP_TRUST_TABLE 11; DCB_ATTR_IEEE_APP 1, DCB_ATTR_DCB_APP 2). Little endian.
#include "rdmak8s/netlink/dcb_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/netlink_bytes.h"

namespace rdmak8s {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using rdmak8s::testing::A;
using rdmak8s::testing::Bytes;
using rdmak8s::testing::Cat;
using rdmak8s::testing::Nest;
using rdmak8s::testing::OnlyMessage;

// nlmsghdr + dcbmsg around attributes.
Bytes Msg(uint8_t type, uint16_t flags, uint32_t seq, uint8_t cmd, const Bytes& attrs) {
  uint32_t len = static_cast<uint32_t>(16 + 4 + attrs.size());
  Bytes h = {static_cast<uint8_t>(len & 0xff), static_cast<uint8_t>(len >> 8), 0, 0, type, 0,
             static_cast<uint8_t>(flags & 0xff), static_cast<uint8_t>(flags >> 8),
             static_cast<uint8_t>(seq), 0, 0, 0, 0, 0, 0, 0,
             0x00, cmd, 0x00, 0x00};  // struct dcbmsg: AF_UNSPEC, cmd, pad
  return Cat({h, attrs});
}

const Bytes kIfnameEth0 = {0x09, 0x00, 0x01, 0x00, 'e', 't', 'h', '0', 0x00, 0x00, 0x00, 0x00};

// struct ieee_pfc is 136 bytes: pfc_cap, pfc_en, mbc, pad, u16 delay, pad to 8, 2 x u64[8].
Bytes PfcBytes(uint8_t cap, uint8_t en, uint16_t delay) {
  Bytes b(136, 0);
  b[0] = cap;
  b[1] = en;
  b[4] = static_cast<uint8_t>(delay & 0xff);
  b[5] = static_cast<uint8_t>(delay >> 8);
  return b;
}

TEST(DcbCodecTest, IeeeStructsHaveTheUapiSizes) {
  EXPECT_EQ(sizeof(ieee_pfc), 136u);
  EXPECT_EQ(sizeof(dcb_app), 4u);
}

TEST(DcbCodecTest, IeeeGetNamesTheNetdev) {
  Bytes want = {
      0x20, 0x00, 0x00, 0x00, 0x4e, 0x00, 0x05, 0x00,  // len 32, RTM_GETDCB, REQUEST|ACK
      0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // seq 7
      0x00, 0x15, 0x00, 0x00,                          // dcbmsg: AF_UNSPEC, DCB_CMD_IEEE_GET
      0x09, 0x00, 0x01, 0x00, 'e', 't', 'h', '0', 0x00, 0x00, 0x00, 0x00,  // DCB_ATTR_IFNAME
  };
  EXPECT_THAT(dcb::BuildIeeeGet(7, "eth0"), ElementsAreArray(want));
}

TEST(DcbCodecTest, SetPfcCarriesTheWholeIeeePfcStruct) {
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 0x08;
  pfc.delay = 0x10;
  Bytes want = Msg(79, 0x05, 1, 20,
                   Cat({kIfnameEth0, Nest(13, {A(2, PfcBytes(8, 0x08, 0x10))})}));
  ASSERT_EQ(want.size(), 176u);
  EXPECT_THAT(dcb::BuildSetPfc(1, "eth0", pfc), ElementsAreArray(want));
}

TEST(DcbCodecTest, AppAddAndDelSendIeeeAndPcpEntriesWithTheirAttrTypes) {
  std::vector<DcbAppEntry> entries = {
      {.selector = kDcbAppSelDscp, .protocol = 26, .priority = 3},
      {.selector = kDcbAppSelPcp, .protocol = 2, .priority = 2},
  };
  Bytes table = Nest(13, {Nest(3, {
                                      A(1, {0x05, 0x03, 0x1a, 0x00}),  // dcb_app: sel 5, prio 3, proto 26
                                      A(2, {0xff, 0x02, 0x02, 0x00}),  // PCP entry: DCB_ATTR_DCB_APP
                                  })});
  EXPECT_THAT(dcb::BuildAppChange(3, "eth0", entries, false),
              ElementsAreArray(Msg(79, 0x05, 3, 20, Cat({kIfnameEth0, table}))));
  EXPECT_THAT(dcb::BuildAppChange(3, "eth0", entries, true),
              ElementsAreArray(Msg(79, 0x05, 3, 27, Cat({kIfnameEth0, table}))));
}

TEST(DcbCodecTest, SetTrustListsSelectorsInOrder) {
  Bytes want = Msg(79, 0x05, 4, 20,
                   Cat({kIfnameEth0, Nest(13, {Nest(11, {A(1, {0x05}), A(2, {0xff})})})}));
  EXPECT_THAT(dcb::BuildSetTrust(4, "eth0", dcb::TrustSelectors(DcbTrust::kDscp)),
              ElementsAreArray(want));
}

TEST(DcbCodecTest, ParsesPfcAppAndTrustFromAnIeeeGetReply) {
  Bytes reply = Msg(78, 0x00, 9, 21,
                    Cat({kIfnameEth0,
                         Nest(13, {A(1, Bytes(59, 0x11)),  // DCB_ATTR_IEEE_ETS: skipped
                                   A(2, PfcBytes(8, 0x08, 0x20)),
                                   Nest(3, {A(1, {0x05, 0x03, 0x1a, 0x00}),
                                            A(1, {0x05, 0x05, 0x30, 0x00}),
                                            A(2, {0xff, 0x01, 0x04, 0x00})}),
                                   Nest(11, {A(1, {0x05}), A(2, {0xff})})}),
                         A(14, {0x0a})}));  // DCB_ATTR_DCBX
  auto st = dcb::ParseIeeeGet(OnlyMessage(reply));
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(st->pfc.has_value());
  EXPECT_EQ(st->pfc->pfc_cap, 8);
  EXPECT_EQ(st->pfc->pfc_en, 0x08);
  EXPECT_EQ(st->pfc->delay, 0x20);
  EXPECT_THAT(st->app, ElementsAre(DcbAppEntry{5, 26, 3}, DcbAppEntry{5, 48, 5},
                                   DcbAppEntry{kDcbAppSelPcp, 4, 1}));
  ASSERT_TRUE(st->trust.has_value());
  EXPECT_THAT(*st->trust, ElementsAre(5, 255));
  EXPECT_EQ(*dcb::TrustFromSelectors(*st->trust), DcbTrust::kDscp);
}

TEST(DcbCodecTest, ReplyWithoutPfcOrTrustLeavesThemEmpty) {
  Bytes reply = Msg(78, 0x00, 9, 21, Cat({kIfnameEth0, Nest(13, {Nest(3, {})})}));
  auto st = dcb::ParseIeeeGet(OnlyMessage(reply));
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_FALSE(st->pfc.has_value());
  EXPECT_FALSE(st->trust.has_value());
  EXPECT_TRUE(st->app.empty());
}

TEST(DcbCodecTest, ShortPfcAttributeIsInvalid) {
  Bytes reply = Msg(78, 0x00, 9, 21, Cat({kIfnameEth0, Nest(13, {A(2, Bytes(8, 0))})}));
  auto st = dcb::ParseIeeeGet(OnlyMessage(reply));
  EXPECT_EQ(st.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.status().message(), HasSubstr("DCB_ATTR_IEEE_PFC is 8 bytes"));
}

TEST(DcbCodecTest, SetReplyCarriesTheDriversErrnoAsAU8) {
  auto reply = [](uint8_t status) {
    return Msg(79, 0x00, 2, 20, Cat({kIfnameEth0, A(13, {status})}));
  };
  EXPECT_TRUE(dcb::ParseSetReply(OnlyMessage(reply(0)), "set PFC on eth0").ok());
  Status unsupported = dcb::ParseSetReply(OnlyMessage(reply(0xa1)), "set PFC on eth0");  // -95
  EXPECT_EQ(unsupported.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(unsupported.message(), "set PFC on eth0: Operation not supported");
  EXPECT_EQ(dcb::ParseSetReply(OnlyMessage(reply(0xea)), "x").code(),  // -22
            StatusCode::kInvalidArgument);
  Bytes no_status = Msg(79, 0x00, 2, 20, kIfnameEth0);
  EXPECT_EQ(dcb::ParseSetReply(OnlyMessage(no_status), "x").code(), StatusCode::kInvalidArgument);
}

TEST(DcbCodecTest, TrustSelectorsMapBothWays) {
  EXPECT_THAT(dcb::TrustSelectors(DcbTrust::kPcp), ElementsAre(255));
  EXPECT_THAT(dcb::TrustSelectors(DcbTrust::kDscp), ElementsAre(5, 255));
  EXPECT_EQ(*dcb::TrustFromSelectors({255}), DcbTrust::kPcp);
  EXPECT_EQ(*dcb::TrustFromSelectors({255, 5}), DcbTrust::kPcp);
  EXPECT_EQ(*dcb::TrustFromSelectors({5}), DcbTrust::kDscp);
  EXPECT_EQ(dcb::TrustFromSelectors({}).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(dcb::TrustFromSelectors({1}).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace rdmak8s
