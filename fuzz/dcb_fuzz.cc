// Fuzz target: the IEEE DCB reply decoders (rdmak8s/netlink/dcb_codec.h ParseIeeeGet,
// ParseSetReply) on what a driver's DCB_CMD_IEEE_GET / SET answer could carry. Input: one datagram;
// its messages are decoded as they come, and the whole input is also decoded as the body (struct
// dcbmsg, then attributes) of an RTM_GETDCB and an RTM_SETDCB reply.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument (a driver's errno in a SET reply is that errno's Status);
//   - what a GET reply said, written with the product's own encoders (BuildSetPfc,
//     BuildAppChange, BuildSetTrust carry the same nested layout as a GET reply) and decoded
//     again, is the same PFC state, APP table and trust table;
//   - TrustFromSelectors reads back every table TrustSelectors writes.
#include <linux/rtnetlink.h>

#include <cstring>

#include "fuzz/fuzz_check.h"
#include "rdmak8s/netlink/dcb_codec.h"

namespace {

using namespace rdmak8s;

nl::Message AsGetReply(const std::vector<uint8_t>& bytes) {
  auto msgs = nl::SplitMessages(bytes);
  FUZZ_CHECK(msgs.ok() && msgs->size() == 1, "an encoder's message does not split");
  nl::Message m = (*msgs)[0];
  m.type = RTM_GETDCB;
  return m;
}

void CheckGet(const nl::Message& m) {
  auto st = dcb::ParseIeeeGet(m);
  if (!st.ok()) {
    FUZZ_CHECK(st.status().code() == StatusCode::kInvalidArgument, st.status().ToString());
    return;
  }
  if (st->pfc) {
    auto again = dcb::ParseIeeeGet(AsGetReply(dcb::BuildSetPfc(1, "eth0", *st->pfc)));
    FUZZ_CHECK(again.ok() && again->pfc &&
                   std::memcmp(&*again->pfc, &*st->pfc, sizeof(ieee_pfc)) == 0,
               "PFC changed in a round trip");
  }
  {
    auto again = dcb::ParseIeeeGet(AsGetReply(dcb::BuildAppChange(1, "eth0", st->app, false)));
    FUZZ_CHECK(again.ok() && again->app == st->app, "APP table changed in a round trip");
  }
  if (st->trust) {
    auto again = dcb::ParseIeeeGet(AsGetReply(dcb::BuildSetTrust(1, "eth0", *st->trust)));
    FUZZ_CHECK(again.ok() && again->trust == st->trust, "trust table changed in a round trip");
    auto trust = dcb::TrustFromSelectors(*st->trust);
    if (trust.ok()) {
      auto back = dcb::TrustFromSelectors(dcb::TrustSelectors(*trust));
      FUZZ_CHECK(back.ok() && *back == *trust, "trust selectors do not read back");
    } else {
      FUZZ_CHECK(trust.status().code() == StatusCode::kFailedPrecondition,
                 trust.status().ToString());
    }
  }
}

void CheckSet(const nl::Message& m) {
  Status s = dcb::ParseSetReply(m, "set pfc");
  (void)s.ToString();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  CheckGet(nl::Message{RTM_GETDCB, 0, 1, 0, bytes});
  CheckSet(nl::Message{RTM_SETDCB, 0, 1, 0, bytes});
  auto msgs = nl::SplitMessages(bytes);
  if (!msgs.ok()) return 0;
  for (const nl::Message& m : *msgs) {
    CheckGet(m);
    CheckSet(m);
  }
  return 0;
}
