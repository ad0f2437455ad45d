// Fuzz target: the node check's results file as the device plugin reads it on every scrape
// (device-plugin/metrics/node_check_results.h ReadNodeCheckResults): whatever the operator's job, or a
// job caught half way, left at the path. Input: the file's bytes.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is kInvalidArgument naming the path (a file that is there is never kNotFound);
//   - results that read back list one item per element of "checks", in order.
#include <nlohmann/json.hpp>

#include "device-plugin/metrics/node_check_results.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmak8s::dp;
  using rdmak8s::StatusCode;
  const std::string path = rdmak8s::fuzz::ScratchDir() + "/node-check.json";
  const std::string_view text = rdmak8s::fuzz::AsText(data, size);
  rdmak8s::fuzz::WriteInput(path, text);
  auto r = ReadNodeCheckResults(path);
  if (!r.ok()) {
    FUZZ_CHECK(r.status().code() == StatusCode::kInvalidArgument, r.status().ToString());
    FUZZ_CHECK(r.status().message().find(path) != std::string::npos, r.status().message());
    return 0;
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  FUZZ_CHECK(j.is_object() && j["checks"].is_array(), "accepted without a checks array");
  FUZZ_CHECK(j["checks"].size() == r->items.size(), std::to_string(r->items.size()) + " items");
  for (size_t i = 0; i < r->items.size(); ++i) {
    FUZZ_CHECK(j["checks"][i]["result"] == r->items[i].result, "item " + std::to_string(i));
  }
  FUZZ_CHECK(j["passed"] == r->passed, "passed");
  return 0;
}
