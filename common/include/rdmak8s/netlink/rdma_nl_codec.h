// Pure encoding/decoding of the RDMA nldev messages rdmak8s sends (include/uapi/rdma/
// rdma_netlink.h; the layouts iproute2's `rdma dev`, `rdma dev set ... netns` and
// `rdma system` use). No sockets: ChannelRdmaNetlink carries these bytes. Tested on bytes.
//
// Every message is a struct nlmsghdr with nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd)
// = (5 << 10) + cmd and no family header: attributes follow the netlink header directly.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rdmak8s/base/status.h"
#include "rdmak8s/netlink/netlink_codec.h"
#include "rdmak8s/netlink/rdma_netlink.h"

namespace rdmak8s::rdma_nl {

// RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd).
uint16_t NldevType(uint16_t cmd);

// RDMA_NLDEV_CMD_GET, NLM_F_DUMP: every device visible in the socket's netns.
std::vector<uint8_t> BuildGetDump(uint32_t seq);
// RDMA_NLDEV_CMD_SYS_GET (NLM_F_ACK).
std::vector<uint8_t> BuildSysGet(uint32_t seq);
// RDMA_NLDEV_CMD_SYS_SET with RDMA_NLDEV_SYS_ATTR_NETNS_MODE (u8: 1 shared, 0 exclusive).
std::vector<uint8_t> BuildSysSetNetnsMode(uint32_t seq, RdmaNetnsMode mode);
// RDMA_NLDEV_CMD_SET with RDMA_NLDEV_ATTR_DEV_INDEX and RDMA_NLDEV_NET_NS_FD (u32).
std::vector<uint8_t> BuildSetNetns(uint32_t seq, uint32_t dev_index, uint32_t netns_fd);
// RDMA_NLDEV_CMD_SET with RDMA_NLDEV_ATTR_DEV_INDEX and RDMA_NLDEV_ATTR_DEV_NAME.
std::vector<uint8_t> BuildRename(uint32_t seq, uint32_t dev_index, std::string_view new_name);

// One RDMA_NLDEV_CMD_GET reply: DEV_INDEX, DEV_NAME, PORT_INDEX (the port count in GET
// replies), NODE_GUID (u64, printed "xxxx:xxxx:xxxx:xxxx" like sysfs node_guid).
// kInvalidArgument when the message is not a GET reply or lacks index or name.
StatusOr<RdmaLinkInfo> ParseDevice(const nl::Message& m);
// An RDMA_NLDEV_CMD_SYS_GET reply's RDMA_NLDEV_SYS_ATTR_NETNS_MODE.
StatusOr<RdmaNetnsMode> ParseSysGet(const nl::Message& m);

// What a failed RDMA_NLDEV_CMD_SET netns means. The kernel (ib_device_set_netns_put) answers
// EOPNOTSUPP both in shared mode and for a driver without disassociate_ucontext (siw), so the
// caller passes the mode it read afterwards: shared -> kFailedPrecondition; otherwise
// EOPNOTSUPP -> kUnimplemented (naming the missing disassociate support and keeping the
// kernel's extack text), EPERM -> kPermissionDenied, ENODEV -> kNotFound, others as ErrnoError.
Status ClassifyMoveError(const Status& kernel, const StatusOr<RdmaNetnsMode>& mode);

}  // namespace rdmak8s::rdma_nl
