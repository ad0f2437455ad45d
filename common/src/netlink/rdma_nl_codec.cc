#include "rdmak8s/netlink/rdma_nl_codec.h"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cerrno>
#include <cstdio>

namespace rdmak8s::rdma_nl {

uint16_t NldevType(uint16_t cmd) {
  return static_cast<uint16_t>(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd));
}

std::vector<uint8_t> BuildGetDump(uint32_t seq) {
  nl::MessageBuilder b(NldevType(RDMA_NLDEV_CMD_GET), NLM_F_REQUEST | NLM_F_DUMP, seq);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildSysGet(uint32_t seq) {
  nl::MessageBuilder b(NldevType(RDMA_NLDEV_CMD_SYS_GET), NLM_F_REQUEST | NLM_F_ACK, seq);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildSysSetNetnsMode(uint32_t seq, RdmaNetnsMode mode) {
  nl::MessageBuilder b(NldevType(RDMA_NLDEV_CMD_SYS_SET), NLM_F_REQUEST | NLM_F_ACK, seq);
  b.PutU8(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, mode == RdmaNetnsMode::kShared ? 1 : 0);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildSetNetns(uint32_t seq, uint32_t dev_index, uint32_t netns_fd) {
  nl::MessageBuilder b(NldevType(RDMA_NLDEV_CMD_SET), NLM_F_REQUEST | NLM_F_ACK, seq);
  b.PutU32(RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
  b.PutU32(RDMA_NLDEV_NET_NS_FD, netns_fd);
  return std::move(b).Finish();
}

std::vector<uint8_t> BuildRename(uint32_t seq, uint32_t dev_index, std::string_view new_name) {
  nl::MessageBuilder b(NldevType(RDMA_NLDEV_CMD_SET), NLM_F_REQUEST | NLM_F_ACK, seq);
  b.PutU32(RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
  b.PutString(RDMA_NLDEV_ATTR_DEV_NAME, new_name);
  return std::move(b).Finish();
}

StatusOr<RdmaLinkInfo> ParseDevice(const nl::Message& m) {
  if (m.type != NldevType(RDMA_NLDEV_CMD_GET)) {
    return InvalidArgumentError("RDMA nldev reply: type " + std::to_string(m.type) +
                                " is not RDMA_NLDEV_CMD_GET");
  }
  auto attrs = nl::ParseAttrs(m.payload);
  if (!attrs.ok()) return attrs.status().Prepend("RDMA nldev GET reply");
  const nl::Attr* index = nl::FindAttr(*attrs, RDMA_NLDEV_ATTR_DEV_INDEX);
  const nl::Attr* name = nl::FindAttr(*attrs, RDMA_NLDEV_ATTR_DEV_NAME);
  if (index == nullptr || !index->U32() || name == nullptr) {
    return InvalidArgumentError("RDMA nldev GET reply without device index or name");
  }
  RdmaLinkInfo d;
  d.index = *index->U32();
  d.name = name->String();
  if (const nl::Attr* ports = nl::FindAttr(*attrs, RDMA_NLDEV_ATTR_PORT_INDEX)) {
    d.num_ports = ports->U32().value_or(0);
  }
  if (const nl::Attr* guid = nl::FindAttr(*attrs, RDMA_NLDEV_ATTR_NODE_GUID)) {
    if (auto g = guid->U64()) {
      char buf[20];
      std::snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x",
                    static_cast<unsigned>((*g >> 48) & 0xffff),
                    static_cast<unsigned>((*g >> 32) & 0xffff),
                    static_cast<unsigned>((*g >> 16) & 0xffff),
                    static_cast<unsigned>(*g & 0xffff));
      d.node_guid = buf;
    }
  }
  return d;
}

StatusOr<RdmaNetnsMode> ParseSysGet(const nl::Message& m) {
  if (m.type != NldevType(RDMA_NLDEV_CMD_SYS_GET)) {
    return InvalidArgumentError("RDMA nldev reply: type " + std::to_string(m.type) +
                                " is not RDMA_NLDEV_CMD_SYS_GET");
  }
  auto attrs = nl::ParseAttrs(m.payload);
  if (!attrs.ok()) return attrs.status().Prepend("RDMA nldev SYS_GET reply");
  const nl::Attr* mode = nl::FindAttr(*attrs, RDMA_NLDEV_SYS_ATTR_NETNS_MODE);
  if (mode == nullptr || !mode->U8()) {
    return InvalidArgumentError("RDMA nldev SYS_GET reply without RDMA_NLDEV_SYS_ATTR_NETNS_MODE");
  }
  return *mode->U8() ? RdmaNetnsMode::kShared : RdmaNetnsMode::kExclusive;
}

Status ClassifyMoveError(const Status& kernel, const StatusOr<RdmaNetnsMode>& mode) {
  if (kernel.ok()) return kernel;
  const int err = kernel.sys_errno();
  if ((err == EOPNOTSUPP || err == EPERM) && mode.ok() && *mode == RdmaNetnsMode::kShared) {
    return FailedPreconditionError(kernel.message() +
                                   " (the RDMA subsystem is in shared netns mode; "
                                   "`rdma system set netns exclusive` is needed)")
        .WithErrno(err);
  }
  if (err == EOPNOTSUPP) {
    return UnimplementedError(kernel.message() +
                              " (the driver cannot change netns: no disassociate support)")
        .WithErrno(err);
  }
  return kernel;
}

}  // namespace rdmak8s::rdma_nl
