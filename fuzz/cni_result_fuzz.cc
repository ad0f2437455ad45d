// Fuzz target: converting a CNI result (a prevResult of any supported version) to the shape of
// every spec version 0.3.0 .. 1.1.0 (cni/spec.h ConvertResult). Input: the result's JSON text.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a result converts to every version or to none, and a refusal is code 7 with a message;
//   - the output says the version asked for; 0.3.x/0.4.0 IP entries carry "version" "4" or "6",
//     1.0.0+ ones none; before 1.1.0 no interface mtu/socketPath/pciID, no route mtu/advmss/
//     priority/table/scope;
//   - converting is idempotent, and converting a converted result to another version is the
//     same as converting the original, unless that other version has fields the first dropped
//     (going from 1.1.0 down and back up loses the 1.1.0-only fields, as the spec intends).
#include "cni/spec.h"
#include "fuzz/fuzz_check.h"

namespace rdmak8s::cni {
namespace {

using nlohmann::json;

void CheckShape(const json& out, std::string_view v) {
  const bool pre1 = CompareVersions(v, "1.0.0") < 0;
  const bool pre11 = CompareVersions(v, "1.1.0") < 0;
  FUZZ_CHECK(out.is_object() && out["cniVersion"] == std::string(v), out.dump());
  if (out.contains("ips")) {
    for (const json& ip : out["ips"]) {
      if (pre1) {
        FUZZ_CHECK(ip.contains("version") && (ip["version"] == "4" || ip["version"] == "6"),
                   ip.dump());
      } else {
        FUZZ_CHECK(!ip.contains("version"), ip.dump());
      }
    }
  }
  if (pre11 && out.contains("interfaces")) {
    for (const json& i : out["interfaces"]) {
      FUZZ_CHECK(!i.contains("mtu") && !i.contains("socketPath") && !i.contains("pciID"), i.dump());
    }
  }
  if (pre11 && out.contains("routes")) {
    for (const json& r : out["routes"]) {
      for (const char* k : {"mtu", "advmss", "priority", "table", "scope"}) {
        FUZZ_CHECK(!r.contains(k), r.dump());
      }
    }
  }
}

}  // namespace
}  // namespace rdmak8s::cni

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rdmak8s::cni;
  using nlohmann::json;
  json result = json::parse(rdmak8s::fuzz::AsText(data, size), nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) return 0;
  std::vector<std::optional<json>> converted;
  for (std::string_view v : kSupportedVersions) {
    CniError err;
    converted.push_back(ConvertResult(result, v, &err));
    if (!converted.back()) {
      FUZZ_CHECK(err.code == kErrInvalidConfig && !err.msg.empty(), err.msg);
    } else {
      CheckShape(*converted.back(), v);
    }
  }
  const bool any = converted.front().has_value();
  for (const auto& c : converted) FUZZ_CHECK(c.has_value() == any, result.dump());
  if (!any) return 0;
  for (size_t a = 0; a < kSupportedVersions.size(); ++a) {
    const bool a_pre11 = CompareVersions(kSupportedVersions[a], "1.1.0") < 0;
    for (size_t b = 0; b < kSupportedVersions.size(); ++b) {
      const bool b_pre11 = CompareVersions(kSupportedVersions[b], "1.1.0") < 0;
      CniError err;
      auto twice = ConvertResult(*converted[a], kSupportedVersions[b], &err);
      FUZZ_CHECK(twice.has_value(), "converted result refused: " + err.msg);
      if (a == b || !(a_pre11 && !b_pre11)) {
        FUZZ_CHECK(*twice == *converted[b],
                   std::string(kSupportedVersions[a]) + " then " + std::string(kSupportedVersions[b]) +
                       ": " + twice->dump() + " != " + converted[b]->dump());
      } else {
        CheckShape(*twice, kSupportedVersions[b]);
      }
    }
  }
  return 0;
}
