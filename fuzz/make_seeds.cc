// Writes the binary seeds of the netlink fuzz targets into <corpus dir>/{netlink,rdma_nl,rtnl,
// dcb}/seed-*: real message shapes (what the kernel answers to the requests rdmak8s sends),
// built with the codecs' own MessageBuilder and request encoders. Each reply is written twice:
// as a datagram (what recvmsg returns) and as its body alone (what the targets also decode as a
// message of the reply's type). The checked-in seeds are this program's output; rerun it after
// changing a message shape: make_fuzz_seeds fuzz/corpus
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rdmak8s/netlink/dcb_codec.h"
#include "rdmak8s/netlink/netlink_codec.h"
#include "rdmak8s/netlink/rdma_nl_codec.h"
#include "rdmak8s/netlink/rtnl_codec.h"

namespace {

using namespace rdmak8s;
using Bytes = std::vector<uint8_t>;

std::string g_dir;

void Write(const std::string& target, const std::string& name, const Bytes& b) {
  std::filesystem::create_directories(g_dir + "/" + target);
  std::ofstream out(g_dir + "/" + target + "/seed-" + name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A reply as a datagram and as its body alone.
void WriteReply(const std::string& target, const std::string& name, const Bytes& datagram) {
  Write(target, name, datagram);
  Write(target, name + "-body", Bytes(datagram.begin() + NLMSG_HDRLEN, datagram.end()));
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes Done(uint32_t seq) {
  nl::MessageBuilder b(NLMSG_DONE, NLM_F_MULTI, seq);
  int32_t zero = 0;
  b.AppendHeader(&zero, sizeof(zero));
  return std::move(b).Finish();
}

// struct nlmsgerr: the error, the request's header (capped) or the whole request, then the
// extended ACK attributes when there is one.
Bytes Ack(uint32_t seq, int err, const Bytes& request, const char* extack, bool capped = true) {
  uint16_t flags = (extack ? NLM_F_ACK_TLVS : 0) | (capped ? NLM_F_CAPPED : 0);
  nl::MessageBuilder b(NLMSG_ERROR, flags, seq);
  int32_t e = -err;
  b.AppendHeader(&e, sizeof(e));
  b.AppendHeader(request.data(), capped ? NLMSG_HDRLEN : request.size());
  if (extack) b.PutString(NLMSGERR_ATTR_MSG, extack);
  return std::move(b).Finish();
}

Bytes RdmaDevice(uint32_t seq, uint32_t index, const char* name, uint32_t ports, uint64_t guid) {
  nl::MessageBuilder b(rdma_nl::NldevType(RDMA_NLDEV_CMD_GET), NLM_F_MULTI, seq);
  b.PutU32(RDMA_NLDEV_ATTR_DEV_INDEX, index);
  b.PutString(RDMA_NLDEV_ATTR_DEV_NAME, name);
  b.PutU32(RDMA_NLDEV_ATTR_PORT_INDEX, ports);
  b.PutU64(RDMA_NLDEV_ATTR_NODE_GUID, guid);
  b.PutString(RDMA_NLDEV_ATTR_FW_VERSION, "22.35.1012");
  b.PutU8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1);
  return std::move(b).Finish();
}

Bytes Link(uint32_t seq, int index, const char* name, const char* kind, const char* parent) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = index;
  ifi.ifi_flags = IFF_UP | IFF_RUNNING | IFF_LOWER_UP;
  nl::MessageBuilder b(RTM_NEWLINK, NLM_F_MULTI, seq);
  b.AppendHeader(&ifi, sizeof(ifi));
  b.PutString(IFLA_IFNAME, name);
  const uint8_t mac[6] = {0x0c, 0x42, 0xa1, 0x5e, 0x00, 0x02};
  b.PutBytes(IFLA_ADDRESS, mac, sizeof(mac));
  b.PutU32(IFLA_MTU, 9000);
  b.PutU8(IFLA_OPERSTATE, IF_OPER_UP);
  if (kind) {
    size_t info = b.BeginNested(IFLA_LINKINFO);
    b.PutString(IFLA_INFO_KIND, kind);
    b.EndNested(info);
    b.PutU32(IFLA_LINK, 4);
    b.PutU32(IFLA_LINK_NETNSID, 0);
  }
  if (parent) {
    b.PutString(IFLA_PARENT_DEV_NAME, parent);
    b.PutString(IFLA_PARENT_DEV_BUS_NAME, "pci");
  }
  return std::move(b).Finish();
}

Bytes Address(uint32_t seq, int family, const char* text, int prefix, int index) {
  ifaddrmsg ifa{};
  ifa.ifa_family = static_cast<uint8_t>(family);
  ifa.ifa_prefixlen = static_cast<uint8_t>(prefix);
  ifa.ifa_index = static_cast<uint32_t>(index);
  nl::MessageBuilder b(RTM_NEWADDR, NLM_F_MULTI, seq);
  b.AppendHeader(&ifa, sizeof(ifa));
  unsigned char raw[16];
  inet_pton(family, text, raw);
  const size_t len = family == AF_INET ? 4 : 16;
  b.PutBytes(IFA_ADDRESS, raw, len);
  if (family == AF_INET) b.PutBytes(IFA_LOCAL, raw, len);
  b.PutString(IFA_LABEL, "ens1f0np0");
  return std::move(b).Finish();
}

Bytes DcbGetReply(uint32_t seq, bool trust) {
  nl::MessageBuilder b(RTM_GETDCB, 0, seq);
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = DCB_CMD_IEEE_GET;
  b.AppendHeader(&d, sizeof(d));
  b.PutString(DCB_ATTR_IFNAME, "ens1f0np0");
  size_t ieee = b.BeginNested(DCB_ATTR_IEEE);
  ieee_pfc pfc{};
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1 << 3;
  b.PutBytes(DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  size_t table = b.BeginNested(DCB_ATTR_IEEE_APP_TABLE);
  for (uint16_t dscp : {26, 48}) {
    dcb_app app{};
    app.selector = IEEE_8021QAZ_APP_SEL_DSCP;
    app.protocol = dscp;
    app.priority = dscp == 26 ? 3 : 6;
    b.PutBytes(DCB_ATTR_IEEE_APP, &app, sizeof(app));
  }
  b.EndNested(table);
  if (trust) {
    size_t t = b.BeginNested(dcb::kDcbAttrDcbAppTrustTable);
    b.PutU8(DCB_ATTR_IEEE_APP, IEEE_8021QAZ_APP_SEL_DSCP);
    b.PutU8(dcb::kDcbAttrDcbApp, kDcbAppSelPcp);
    b.EndNested(t);
  }
  b.EndNested(ieee);
  b.PutU8(DCB_ATTR_DCBX, DCB_CAP_DCBX_VER_IEEE);
  return std::move(b).Finish();
}

Bytes DcbSetReply(uint32_t seq, int err) {
  nl::MessageBuilder b(RTM_SETDCB, 0, seq);
  dcbmsg d{};
  d.dcb_family = AF_UNSPEC;
  d.cmd = DCB_CMD_IEEE_SET;
  b.AppendHeader(&d, sizeof(d));
  b.PutU8(DCB_ATTR_IEEE, static_cast<uint8_t>(-err));
  return std::move(b).Finish();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <fuzz corpus dir>\n", argv[0]);
    return 2;
  }
  g_dir = argv[1];

  const Bytes get_link = rtnl::BuildGetLink(7, 0, "ens1f0np0");
  Write("netlink", "get-link-request", get_link);
  Write("netlink", "ack", Ack(7, 0, get_link, nullptr));
  Write("netlink", "ack-extack", Ack(7, ENODEV, get_link, "Cannot find device"));
  Write("netlink", "dump-done", Cat({Link(8, 2, "lo", nullptr, nullptr), Done(8)}));
  Write("netlink", "ack-uncapped", Ack(9, EINVAL, get_link, "bad attribute", /*capped=*/false));
  Write("netlink", "attrs", Bytes(get_link.begin() + NLMSG_HDRLEN + sizeof(ifinfomsg), get_link.end()));

  WriteReply("rdma_nl", "get-reply", RdmaDevice(3, 0, "mlx5_0", 1, 0x0c42a10300001234ULL));
  Write("rdma_nl", "get-dump", Cat({RdmaDevice(3, 0, "mlx5_0", 1, 0x0c42a10300001234ULL),
                                    RdmaDevice(3, 1, "mlx5_1", 2, 0x0c42a10300001235ULL), Done(3)}));
  {
    Bytes sys = rdma_nl::BuildSysSetNetnsMode(4, RdmaNetnsMode::kExclusive);
    uint16_t type = rdma_nl::NldevType(RDMA_NLDEV_CMD_SYS_GET);
    std::memcpy(sys.data() + 4, &type, sizeof(type));
    WriteReply("rdma_nl", "sys-get-reply", sys);
  }
  Write("rdma_nl", "set-netns-request", rdma_nl::BuildSetNetns(5, 2, 9));
  Write("rdma_nl", "rename-request", rdma_nl::BuildRename(6, 2, "mlx5_2"));

  WriteReply("rtnl", "newlink-pf", Link(1, 4, "ens1f0np0", nullptr, "0000:5e:00.0"));
  WriteReply("rtnl", "newlink-macvlan", Link(1, 9, "net1", "macvlan", nullptr));
  WriteReply("rtnl", "newaddr-v4", Address(2, AF_INET, "10.0.0.2", 24, 4));
  WriteReply("rtnl", "newaddr-v6", Address(2, AF_INET6, "fd00::2", 64, 4));
  Write("rtnl", "addr-dump", Cat({Address(2, AF_INET, "10.0.0.2", 24, 4),
                                  Address(2, AF_INET6, "fe80::e42:a1ff:fe5e:2", 64, 4), Done(2)}));
  Write("rtnl", "move-request", rtnl::BuildMoveLinkToNetns(3, 4, 5, "net1"));

  WriteReply("dcb", "ieee-get-reply", DcbGetReply(1, true));
  WriteReply("dcb", "ieee-get-reply-no-trust", DcbGetReply(1, false));
  WriteReply("dcb", "set-reply-ok", DcbSetReply(2, 0));
  WriteReply("dcb", "set-reply-eopnotsupp", DcbSetReply(2, EOPNOTSUPP));
  Write("dcb", "app-change-request",
        dcb::BuildAppChange(3, "ens1f0np0", {{kDcbAppSelDscp, 26, 3}, {kDcbAppSelPcp, 3, 3}}, false));
  Write("dcb", "set-trust-request", dcb::BuildSetTrust(4, "ens1f0np0", dcb::TrustSelectors(DcbTrust::kDscp)));
  return 0;
}
