// Fuzz target: what the API server answers the slice publisher (dra/api/resource_slice.h
// DecodeResourceSlice, dra/api/slice_publisher.h SlicePublisher): a ResourceSlice object, a list
// page of them, a Node. Input: "<list page>" or "<list page>\0<node>" (the part after the first
// NUL is the Node's answer; a valid Node otherwise).
//
// Invariants beyond "no crash, no sanitizer report" (no nlohmann exception may escape: in the
// driver it would end the slice thread and the process):
//   - DecodeResourceSlice of the input as an object, in v1 and v1beta1: a refusal is
//     kInvalidArgument; a slice it reads, encoded (EncodeResourceSlice) and decoded again, has
//     the same name, driver, node, pool, owner and devices;
//   - SlicePublisher::Publish over a server whose first list page is the input (later pages
//     empty, writes echoed back) returns, Ok or an error, and DeleteAll the same.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "dra/api/api_version.h"
#include "dra/api/resource_slice.h"
#include "dra/api/slice_publisher.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace rdmak8s;
using namespace rdmak8s::dra;
using nlohmann::json;

constexpr const char* kNode = R"({"kind":"Node","metadata":{"name":"node-a","uid":"5e1f"}})";

// A server whose first list answer is the input; discovery serves v1 and v1beta1, writes are
// echoed back with a resourceVersion, deletes succeed.
class InputApi final : public KubeApi {
 public:
  InputApi(std::string list, std::string node) : list_(std::move(list)), node_(std::move(node)) {}
  StatusOr<HttpResponse> Send(const HttpRequest& r) override {
    if (r.path == "/apis/resource.k8s.io") {
      return HttpResponse{200, R"({"versions":[{"version":"v1"},{"version":"v1beta1"}]})", ""};
    }
    if (r.path.rfind("/api/v1/nodes/", 0) == 0) return HttpResponse{200, node_, ""};
    if (r.method == "GET") {
      // The input once, then (a continue token, a relist) an empty page: the target is about
      // decoding, not about a server that never ends its list.
      if (lists_++ == 0) return HttpResponse{200, list_, ""};
      return HttpResponse{200, R"({"items":[],"metadata":{}})", ""};
    }
    if (r.method == "DELETE") return HttpResponse{200, "{}", ""};
    json obj = json::parse(r.body, nullptr, false);
    if (obj.is_object()) obj["metadata"]["resourceVersion"] = "7";
    return HttpResponse{201, obj.dump(), ""};
  }
  const std::string& server() const override { return server_; }

 private:
  std::string list_, node_;
  int lists_ = 0;
  std::string server_ = "https://fuzz:6443";
};

void CheckDecode(const json& object, ResourceApiVersion v) {
  auto s = DecodeResourceSlice(object, v);
  if (!s.ok()) {
    FUZZ_CHECK(s.status().code() == StatusCode::kInvalidArgument, s.status().ToString());
    return;
  }
  const json encoded = EncodeResourceSlice(*s, v);
  auto again = DecodeResourceSlice(encoded, v);
  FUZZ_CHECK(again.ok(), encoded.dump() + ": " + again.status().ToString());
  FUZZ_CHECK(again->name == s->name && again->driver == s->driver && again->node_name == s->node_name &&
                 again->pool_name == s->pool_name && again->owner_node_uid == s->owner_node_uid &&
                 again->devices == s->devices,
             encoded.dump());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {  // the version discovery logs the version: not per input
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  const std::string_view input = fuzz::AsText(data, size);
  const size_t nul = input.find('\0');
  const std::string list(input.substr(0, nul));
  const std::string node = nul == std::string_view::npos ? kNode : std::string(input.substr(nul + 1));

  json object = json::parse(list, nullptr, false);
  if (!object.is_discarded()) {
    CheckDecode(object, ResourceApiVersion::kV1);
    CheckDecode(object, ResourceApiVersion::kV1beta1);
  }

  PublisherOptions options;
  options.driver = "rdma.rdmak8s.io";
  options.node_name = "node-a";
  {
    InputApi api(list, node);
    SlicePublisher publisher(&api, options);
    (void)publisher.Publish({});
  }
  {
    InputApi api(list, node);
    SlicePublisher publisher(&api, options);
    (void)publisher.DeleteAll();
  }
  return 0;
}
