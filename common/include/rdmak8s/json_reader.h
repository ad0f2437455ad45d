// The one strict JSON reader of the project: checked reads of untrusted JSON (an API server's
// answers: ResourceSlice objects and lists, watch events, the Node, APIGroup discovery; records
// and files on the node). A field of the wrong type is an InvalidArgument error naming its path
// from the document's root ("$.metadata.continue: not a string (number)"), never a nlohmann
// exception (which, escaping a thread of a daemon, would be std::terminate).
//
// Absent and null fields read as "not there": ObjectAt/ArrayAt give nullptr, StringAt gives ""
// (or kInvalidArgument "missing" when required), IntAt/BoolAt the default.
//
// One message style for every reader of the project (the device plugin's config, selectors and
// allocate options, the DRA driver's files, the CNI's netconf, the QoS policy): "<path>: <what>",
// the path from the document's root ("$.pools[0].name") or the component's own prefix:
//   wrong type:   "$.pools: not a list (object)"
//   missing:      "$.pools[0].name: missing"
//   unknown key:  "$.poolz: unknown field (allowed: pools, resourcePrefix)"
// and the caller's own rule for a bad value ("$.pools[0].capacity: must be \"auto\" or ...").
//
// Pure code. Thread safety: free functions over values.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmak8s/status.h"

namespace rdmak8s::json_reader {

// "$.a" + "b" -> "$.a.b"; "$.a" + 2 -> "$.a[2]".
std::string Field(std::string_view path, std::string_view key);
std::string Index(std::string_view path, size_t i);

// kInvalidArgument "<path>: <what>": the one shape of a reader's error.
Status Invalid(std::string_view path, std::string_view what);
// kInvalidArgument "<path>: not <want> (<type of got>)"; `want` is "an object", "a list", ...
Status NotA(std::string_view path, std::string_view want, const nlohmann::json& got);
// kInvalidArgument "<path>: missing".
Status Missing(std::string_view path);

// OK when every key of the object `obj` (at `path`) is one of `allowed`: anything else is a
// typo we refuse rather than ignore ("<path>.<key>: unknown field (allowed: a, b)", the allowed
// keys sorted).
Status CheckKeys(const nlohmann::json& obj, std::string_view path,
                 std::initializer_list<std::string_view> allowed);

// `v` (at `path`) as a list of strings: "<path>: not a list (string)",
// "<path>[2]: not a string (number)".
StatusOr<std::vector<std::string>> StringList(const nlohmann::json& v, std::string_view path);

// `text` parsed; `what` names the answer ("GET https://h/api/v1/nodes/n") in the error.
StatusOr<nlohmann::json> Parse(std::string_view text, std::string_view what);

// OK when `v` (at `path`) is an object.
Status RequireObject(const nlohmann::json& v, std::string_view path);

// obj[key] where obj is an object at `path`: nullptr when absent or null.
StatusOr<const nlohmann::json*> ObjectAt(const nlohmann::json& obj, std::string_view path,
                                         std::string_view key);
StatusOr<const nlohmann::json*> ArrayAt(const nlohmann::json& obj, std::string_view path,
                                        std::string_view key);
StatusOr<std::string> StringAt(const nlohmann::json& obj, std::string_view path,
                               std::string_view key, bool required = false);
StatusOr<int64_t> IntAt(const nlohmann::json& obj, std::string_view path, std::string_view key,
                        int64_t default_value);
StatusOr<bool> BoolAt(const nlohmann::json& obj, std::string_view path, std::string_view key,
                      bool default_value);

}  // namespace rdmak8s::json_reader
