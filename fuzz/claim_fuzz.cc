// Fuzz target: a ResourceClaim as the API server (or whoever answers in its place) returns it
// (dra/api/claim_reader.h ParseResourceClaim), and the same answer through ApiClaimReader's
// GetClaim, and the same bytes as the answer to the version discovery (GET /apis/resource.k8s.io,
// dra/api/api_version.h) that a reader without a fixed version makes first. Input: the JSON text.
//
// Invariants beyond "no crash, no sanitizer report" (no nlohmann exception may escape):
//   - a refusal is kInvalidArgument naming the field;
//   - a claim GetClaim returns from a 200 answer with that body is the claim ParseResourceClaim
//     reads (GetClaim may refuse more: an answer for another claim).
#include <chrono>
#include <spdlog/spdlog.h>

#include "dra/api/api_version.h"
#include "dra/api/claim_reader.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace rdmak8s;
using namespace rdmak8s::dra;

class AnswerApi final : public KubeApi {
 public:
  explicit AnswerApi(std::string body) : body_(std::move(body)) {}
  StatusOr<HttpResponse> Send(const HttpRequest&) override { return HttpResponse{200, body_, ""}; }
  const std::string& server() const override { return server_; }

 private:
  std::string body_;
  std::string server_ = "https://fuzz:6443";
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {  // a discovery that succeeds logs the version: not per input
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string text(fuzz::AsText(data, size));
  auto claim = ParseResourceClaim(text);
  if (!claim.ok()) {
    FUZZ_CHECK(claim.status().code() == StatusCode::kInvalidArgument, claim.status().ToString());
  }
  for (ResourceApiVersion v : {ResourceApiVersion::kV1, ResourceApiVersion::kV1beta1}) {
    AnswerApi api(text);
    ApiClaimReader reader(&api, v);
    auto got = reader.GetClaim("ns", "claim", std::chrono::steady_clock::now() + std::chrono::seconds(10));
    if (!got.ok()) continue;
    FUZZ_CHECK(claim.ok(), "GetClaim accepted what ParseResourceClaim refuses: " + claim.status().ToString());
    FUZZ_CHECK(*got == *claim, "GetClaim decoded another claim");
  }
  {
    AnswerApi api(text);
    ApiVersionSource versions(&api);
    ApiClaimReader reader(&api, &versions);
    (void)reader.GetClaim("ns", "claim", std::chrono::steady_clock::now() + std::chrono::seconds(10));
  }
  return 0;
}
