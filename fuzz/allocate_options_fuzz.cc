// Fuzz target: one "allocate" object (node/allocate.h ParseAllocateOptions): a pool's
// options in the device plugin's config, and the opaque parameters of a DRA claim or class, which
// a tenant writes. Input: the JSON text.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument naming a JSON path from "$";
//   - options that parse, written back in the documented form and parsed again, are the same.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "node/allocate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using rdmak8s::node::ParseAllocateOptions;
  using rdmak8s::StatusCode;
  auto opts = ParseAllocateOptions(rdmak8s::fuzz::AsText(data, size));
  if (!opts.ok()) {
    FUZZ_CHECK(opts.status().code() == StatusCode::kInvalidArgument, opts.status().ToString());
    FUZZ_CHECK(opts.status().message().rfind("$", 0) == 0, opts.status().message());
    return 0;
  }
  const nlohmann::json back = {{"ncclEnv", opts->nccl_env}, {"ucxEnv", opts->ucx_env},
                               {"issm", opts->issm},        {"roceUmad", opts->roce_umad},
                               {"env", opts->extra_env}};
  const std::string written = back.dump();
  auto again = ParseAllocateOptions(written);
  FUZZ_CHECK(again.ok(), written + ": " + again.status().ToString());
  FUZZ_CHECK(*again == *opts, written);
  return 0;
}
