// Fuzz target: the RDMA nldev reply decoders (rdmak8s/netlink/rdma_nl_codec.h ParseDevice,
// ParseSysGet) on what the kernel's RDMA_NLDEV_CMD_GET dump and SYS_GET answer could be. Input: one
// datagram; its messages are decoded as they come, and the whole input is also decoded as the
// attribute block of a GET and a SYS_GET reply, so mutations reach the attribute parsing directly.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument;
//   - a decoded device, encoded again as the kernel would (DEV_INDEX, DEV_NAME, PORT_INDEX,
//     NODE_GUID), decodes to the same device; its GUID is printed "xxxx:xxxx:xxxx:xxxx";
//   - a decoded netns mode, encoded by BuildSysSetNetnsMode, decodes to the same mode.
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cinttypes>
#include <cstdio>

#include "fuzz/fuzz_check.h"
#include "rdmak8s/netlink/rdma_nl_codec.h"

namespace {

using namespace rdmak8s;

nl::Message OnlyMessage(const std::vector<uint8_t>& bytes) {
  auto msgs = nl::SplitMessages(bytes);
  FUZZ_CHECK(msgs.ok() && msgs->size() == 1, "an encoder's message does not split");
  return (*msgs)[0];
}

void CheckDevice(const nl::Message& m) {
  auto d = rdma_nl::ParseDevice(m);
  if (!d.ok()) {
    FUZZ_CHECK(d.status().code() == StatusCode::kInvalidArgument, d.status().ToString());
    return;
  }
  FUZZ_CHECK(d->name.find('\0') == std::string::npos, "NUL in a device name");
  nl::MessageBuilder b(rdma_nl::NldevType(RDMA_NLDEV_CMD_GET), NLM_F_MULTI, 1);
  b.PutU32(RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
  b.PutString(RDMA_NLDEV_ATTR_DEV_NAME, d->name);
  b.PutU32(RDMA_NLDEV_ATTR_PORT_INDEX, d->num_ports);
  if (!d->node_guid.empty()) {
    unsigned g[4];
    char tail;
    FUZZ_CHECK(d->node_guid.size() == 19 &&
                   std::sscanf(d->node_guid.c_str(), "%4x:%4x:%4x:%4x%c", &g[0], &g[1], &g[2],
                               &g[3], &tail) == 4,
               d->node_guid);
    b.PutU64(RDMA_NLDEV_ATTR_NODE_GUID, (uint64_t{g[0]} << 48) | (uint64_t{g[1]} << 32) |
                                            (uint64_t{g[2]} << 16) | g[3]);
  }
  const std::vector<uint8_t> bytes = std::move(b).Finish();
  auto again = rdma_nl::ParseDevice(OnlyMessage(bytes));
  FUZZ_CHECK(again.ok(), again.status().ToString());
  FUZZ_CHECK(again->index == d->index && again->name == d->name &&
                 again->num_ports == d->num_ports && again->node_guid == d->node_guid,
             d->name + " changed in a round trip");
}

void CheckSysGet(const nl::Message& m) {
  auto mode = rdma_nl::ParseSysGet(m);
  if (!mode.ok()) {
    FUZZ_CHECK(mode.status().code() == StatusCode::kInvalidArgument, mode.status().ToString());
    return;
  }
  const std::vector<uint8_t> bytes = rdma_nl::BuildSysSetNetnsMode(1, *mode);
  nl::Message reply = OnlyMessage(bytes);
  reply.type = rdma_nl::NldevType(RDMA_NLDEV_CMD_SYS_GET);  // a GET reply has the SET's layout
  auto again = rdma_nl::ParseSysGet(reply);
  FUZZ_CHECK(again.ok() && *again == *mode, "netns mode changed in a round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  CheckDevice(nl::Message{rdma_nl::NldevType(RDMA_NLDEV_CMD_GET), NLM_F_MULTI, 1, 0, bytes});
  CheckSysGet(nl::Message{rdma_nl::NldevType(RDMA_NLDEV_CMD_SYS_GET), 0, 1, 0, bytes});
  auto msgs = nl::SplitMessages(bytes);
  if (!msgs.ok()) return 0;
  for (const nl::Message& m : *msgs) {
    CheckDevice(m);
    CheckSysGet(m);
  }
  return 0;
}
