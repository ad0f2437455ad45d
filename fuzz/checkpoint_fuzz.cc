// Fuzz target: the DRA driver's checkpoint as it reads it back at start (dra/checkpoint.h
// ParseCheckpoint): a file a crash, an older release or an admin's editor left. Input: the file's
// bytes.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument naming a JSON path ("$...");
//   - a checkpoint that parses, serialised (SerializeCheckpoint) and parsed again, is the same
//     map: a restart twice in a row loses nothing.
#include "dra/checkpoint.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmak8s::dra;
  using rdmak8s::StatusCode;
  auto claims = ParseCheckpoint(rdmak8s::fuzz::AsText(data, size));
  if (!claims.ok()) {
    FUZZ_CHECK(claims.status().code() == StatusCode::kInvalidArgument, claims.status().ToString());
    FUZZ_CHECK(claims.status().message().find('$') != std::string::npos, claims.status().message());
    return 0;
  }
  for (const auto& [uid, claim] : *claims) FUZZ_CHECK(uid == claim.uid, uid + " keyed as " + claim.uid);
  const std::string written = SerializeCheckpoint(*claims);
  auto again = ParseCheckpoint(written);
  FUZZ_CHECK(again.ok(), written + ": " + again.status().ToString());
  FUZZ_CHECK(*again == *claims, written);
  return 0;
}
