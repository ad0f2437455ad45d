// RDMA nldev and generic netlink codecs, checked against bytes derived by hand from the uapi
// layouts (include/uapi/linux/netlink.h, include/uapi/rdma/rdma_netlink.h). x86-64 is little
// endian: u16/u32 fields below are written low byte first.
#include "rdmak8s/netlink/rdma_nl_codec.h"

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "rdmak8s/netlink/netlink_codec.h"

namespace rdmak8s {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

nl::Message OnlyMessage(const Bytes& datagram) {
  auto msgs = nl::SplitMessages(datagram);
  EXPECT_TRUE(msgs.ok()) << msgs.status().ToString();
  EXPECT_EQ(msgs->size(), 1u);
  return msgs->at(0);
}

TEST(RdmaNlCodecTest, NldevTypeIsClientShiftedByTenPlusCommand) {
  // RDMA_NL_NLDEV = 5: (5 << 10) + 1 = 0x1401.
  EXPECT_EQ(rdma_nl::NldevType(1), 0x1401);
  EXPECT_EQ(rdma_nl::NldevType(7), 0x1407);
}

TEST(RdmaNlCodecTest, GetDumpIsABareDumpRequest) {
  Bytes want = {
      0x10, 0x00, 0x00, 0x00,  // nlmsg_len 16
      0x01, 0x14,              // RDMA_NLDEV_CMD_GET
      0x01, 0x03,              // NLM_F_REQUEST | NLM_F_DUMP (0x301)
      0x11, 0x00, 0x00, 0x00,  // seq
      0x00, 0x00, 0x00, 0x00,  // port (kernel)
  };
  EXPECT_THAT(rdma_nl::BuildGetDump(0x11), ElementsAreArray(want));
}

TEST(RdmaNlCodecTest, SysGetAsksForAnAck) {
  Bytes want = {0x10, 0x00, 0x00, 0x00, 0x06, 0x14, 0x05, 0x00,
                0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_THAT(rdma_nl::BuildSysGet(5), ElementsAreArray(want));
}

TEST(RdmaNlCodecTest, SysSetNetnsModeCarriesAPaddedU8) {
  Bytes exclusive = {
      0x18, 0x00, 0x00, 0x00, 0x07, 0x14, 0x05, 0x00,  // len 24, SYS_SET, REQUEST|ACK
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // seq 1
      0x05, 0x00, 0x42, 0x00,                          // nla_len 5, RDMA_NLDEV_SYS_ATTR_NETNS_MODE (66)
      0x00, 0x00, 0x00, 0x00,                          // 0 = exclusive, 3 bytes pad
  };
  EXPECT_THAT(rdma_nl::BuildSysSetNetnsMode(1, RdmaNetnsMode::kExclusive),
              ElementsAreArray(exclusive));
  Bytes shared = exclusive;
  shared[20] = 0x01;
  EXPECT_THAT(rdma_nl::BuildSysSetNetnsMode(1, RdmaNetnsMode::kShared), ElementsAreArray(shared));
}

TEST(RdmaNlCodecTest, SetNetnsCarriesDeviceIndexAndNetnsFd) {
  Bytes want = {
      0x20, 0x00, 0x00, 0x00, 0x02, 0x14, 0x05, 0x00,  // len 32, RDMA_NLDEV_CMD_SET, REQUEST|ACK
      0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // seq 2
      0x08, 0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00,  // RDMA_NLDEV_ATTR_DEV_INDEX = 3
      0x08, 0x00, 0x44, 0x00, 0x09, 0x00, 0x00, 0x00,  // RDMA_NLDEV_NET_NS_FD (68) = 9
  };
  EXPECT_THAT(rdma_nl::BuildSetNetns(2, 3, 9), ElementsAreArray(want));
}

TEST(RdmaNlCodecTest, RenameCarriesANulTerminatedPaddedName) {
  Bytes want = {
      0x24, 0x00, 0x00, 0x00, 0x02, 0x14, 0x05, 0x00,  // len 36
      0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // seq 4
      0x08, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00,  // DEV_INDEX = 2
      0x0b, 0x00, 0x02, 0x00,                          // nla_len 11, RDMA_NLDEV_ATTR_DEV_NAME
      'm',  'l',  'x',  '5',  '_',  '9',  0x00, 0x00,  // "mlx5_9\0" + 1 pad byte
  };
  EXPECT_THAT(rdma_nl::BuildRename(4, 2, "mlx5_9"), ElementsAreArray(want));
}

Bytes DeviceReply(bool with_name) {
  Bytes attrs = Cat({
      {0x08, 0x00, 0x01, 0x00, 0x07, 0x00, 0x00, 0x00},  // DEV_INDEX 7
      with_name ? Bytes{0x09, 0x00, 0x02, 0x00, 'r', 'x', 'e', '0', 0x00, 0x00, 0x00, 0x00}
                : Bytes{},                               // DEV_NAME "rxe0"
      {0x08, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00},  // PORT_INDEX (port count) 1
      {0x0c, 0x00, 0x06, 0x00,                           // NODE_GUID u64 0x020000fffe000001
       0x01, 0x00, 0x00, 0xfe, 0xff, 0x00, 0x00, 0x02},
      {0x08, 0x00, 0x03, 0x01, 0xaa, 0xbb, 0xcc, 0xdd},  // unknown attr 259: ignored
  });
  uint8_t len = static_cast<uint8_t>(16 + attrs.size());
  return Cat({{len, 0x00, 0x00, 0x00, 0x01, 0x14, 0x02, 0x00,  // GET reply, NLM_F_MULTI
               0x03, 0x00, 0x00, 0x00, 0x99, 0x00, 0x00, 0x00},
              attrs});
}

TEST(RdmaNlCodecTest, ParsesADeviceFromAGetReply) {
  auto d = rdma_nl::ParseDevice(OnlyMessage(DeviceReply(true)));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->index, 7u);
  EXPECT_EQ(d->name, "rxe0");
  EXPECT_EQ(d->num_ports, 1u);
  EXPECT_EQ(d->node_guid, "0200:00ff:fe00:0001");
}

TEST(RdmaNlCodecTest, GetReplyWithoutNameIsInvalid) {
  auto d = rdma_nl::ParseDevice(OnlyMessage(DeviceReply(false)));
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
}

TEST(RdmaNlCodecTest, AttributeRunningPastTheMessageIsInvalid) {
  Bytes bad = {0x18, 0x00, 0x00, 0x00, 0x01, 0x14, 0x02, 0x00, 0x03, 0x00, 0x00, 0x00,
               0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x01, 0x00, 0x07, 0x00, 0x00, 0x00};
  auto d = rdma_nl::ParseDevice(OnlyMessage(bad));
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("bad length 64"));
}

TEST(RdmaNlCodecTest, ParsesNetnsModeFromSysGetReply) {
  Bytes reply = {0x18, 0x00, 0x00, 0x00, 0x06, 0x14, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
                 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x42, 0x00, 0x01, 0x00, 0x00, 0x00};
  auto shared = rdma_nl::ParseSysGet(OnlyMessage(reply));
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(*shared, RdmaNetnsMode::kShared);
  reply[20] = 0;
  EXPECT_EQ(*rdma_nl::ParseSysGet(OnlyMessage(reply)), RdmaNetnsMode::kExclusive);
  // Wrong command type.
  reply[4] = 0x01;
  EXPECT_EQ(rdma_nl::ParseSysGet(OnlyMessage(reply)).status().code(),
            StatusCode::kInvalidArgument);
}

// NLMSG_ERROR with NLM_F_CAPPED | NLM_F_ACK_TLVS: error, the request's header only, then
// NLMSGERR_ATTR_MSG.
Bytes CappedError(int32_t err, const std::string& text) {
  Bytes msg(text.begin(), text.end());
  msg.push_back(0);
  uint16_t alen = static_cast<uint16_t>(4 + msg.size());
  while (msg.size() % 4) msg.push_back(0);
  Bytes attr = Cat({{static_cast<uint8_t>(alen), 0x00, 0x01, 0x00}, msg});
  Bytes e(4);
  std::memcpy(e.data(), &err, 4);
  Bytes body = Cat({e,
                    {0x20, 0x00, 0x00, 0x00, 0x02, 0x14, 0x05, 0x00,  // the request's header
                     0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
                    attr});
  uint8_t len = static_cast<uint8_t>(16 + body.size());
  return Cat({{len, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x03,  // NLMSG_ERROR, CAPPED|ACK_TLVS
               0x02, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00},
              body});
}

TEST(NetlinkCodecTest, ErrorWithExtackBecomesStatusWithKernelText) {
  auto ack = nl::ParseAck(OnlyMessage(CappedError(-95, "siw0: no disassociate support")));
  ASSERT_TRUE(ack.ok()) << ack.status().ToString();
  EXPECT_EQ(ack->error, 95);
  EXPECT_EQ(ack->extack, "siw0: no disassociate support");
  Status s = nl::AckToStatus(*ack, "move RDMA device siw0");
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.sys_errno(), 95);
  EXPECT_EQ(s.message(),
            "move RDMA device siw0: Operation not supported (kernel: siw0: no disassociate "
            "support)");
}

TEST(NetlinkCodecTest, UncappedErrorSkipsTheEchoedRequestBeforeExtack) {
  // error -19 (ENODEV), the whole 20-byte request echoed (padded to 20), then the message.
  Bytes body = Cat({{0xed, 0xff, 0xff, 0xff},
                    {0x14, 0x00, 0x00, 0x00, 0x02, 0x14, 0x05, 0x00, 0x02, 0x00, 0x00, 0x00,
                     0x00, 0x00, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef},
                    {0x08, 0x00, 0x01, 0x00, 'n', 'o', '!', 0x00}});
  Bytes m = Cat({{static_cast<uint8_t>(16 + body.size()), 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
                  0x02,  // NLM_F_ACK_TLVS only
                  0x02, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00},
                 body});
  auto ack = nl::ParseAck(OnlyMessage(m));
  ASSERT_TRUE(ack.ok()) << ack.status().ToString();
  EXPECT_EQ(ack->error, 19);
  EXPECT_EQ(ack->extack, "no!");
  EXPECT_EQ(nl::AckToStatus(*ack, "x").code(), StatusCode::kNotFound);
}

TEST(NetlinkCodecTest, PlainAckHasNoError) {
  Bytes m = {0x24, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00,
             0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
             0x02, 0x14, 0x05, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  auto ack = nl::ParseAck(OnlyMessage(m));
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(ack->error, 0);
  EXPECT_EQ(ack->extack, "");
}

TEST(NetlinkCodecTest, SplitsADatagramAndRejectsATruncatedOne) {
  Bytes two = Cat({rdma_nl::BuildSysGet(1), rdma_nl::BuildGetDump(2)});
  auto msgs = nl::SplitMessages(two);
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].seq, 1u);
  EXPECT_EQ((*msgs)[1].type, 0x1401);
  two.pop_back();
  EXPECT_EQ(nl::SplitMessages(two).status().code(), StatusCode::kInvalidArgument);
}

TEST(NetlinkCodecTest, NestedAttributesCarryTheNestedFlagAndTheirFullLength) {
  nl::MessageBuilder b(1, 0, 0);
  size_t n = b.BeginNested(3);
  b.PutU8(1, 0xab);
  b.EndNested(n);
  Bytes got = std::move(b).Finish();
  Bytes want = {0x1c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                0x00, 0x00, 0x00, 0x00,
                0x0c, 0x00, 0x03, 0x80,                          // len 12, type 3 | NLA_F_NESTED
                0x05, 0x00, 0x01, 0x00, 0xab, 0x00, 0x00, 0x00};
  EXPECT_THAT(got, ElementsAreArray(want));
}

}  // namespace
}  // namespace rdmak8s

namespace rdmak8s {
namespace {

Status KernelSaid(int err, const std::string& extack = "") {
  return nl::AckToStatus(nl::Ack{err, extack}, "move RDMA device siw0 to netns fd 5");
}

TEST(ClassifyMoveErrorTest, EopnotsuppInSharedModeIsFailedPrecondition) {
  Status s = rdma_nl::ClassifyMoveError(KernelSaid(EOPNOTSUPP), RdmaNetnsMode::kShared);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("shared netns mode"));
  EXPECT_EQ(s.sys_errno(), EOPNOTSUPP);
}

TEST(ClassifyMoveErrorTest, EopnotsuppInExclusiveModeIsUnimplementedWithExtack) {
  Status s = rdma_nl::ClassifyMoveError(KernelSaid(EOPNOTSUPP, "siw0 cannot move"),
                                        RdmaNetnsMode::kExclusive);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("kernel: siw0 cannot move"));
  EXPECT_THAT(s.message(), ::testing::HasSubstr("no disassociate support"));
}

TEST(ClassifyMoveErrorTest, EpermIsPermissionDeniedUnlessShared) {
  EXPECT_EQ(rdma_nl::ClassifyMoveError(KernelSaid(EPERM), RdmaNetnsMode::kExclusive).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(rdma_nl::ClassifyMoveError(KernelSaid(EPERM), RdmaNetnsMode::kShared).code(),
            StatusCode::kFailedPrecondition);
}

TEST(ClassifyMoveErrorTest, UnknownModeKeepsTheKernelsAnswer) {
  Status s = rdma_nl::ClassifyMoveError(KernelSaid(ENODEV), InternalError("mode unreadable"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(rdma_nl::ClassifyMoveError(KernelSaid(EOPNOTSUPP), InternalError("x")).code(),
            StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace rdmak8s
