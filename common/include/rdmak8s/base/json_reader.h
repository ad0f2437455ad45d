// The one strict JSON reader of the project: checked reads of untrusted JSON (an API server's
// answers: ResourceClaim and ResourceSlice objects and lists, watch events, the Node, APIGroup
// discovery; the CNI's netconf; configs, records and files on the node). Every document the
// project parses goes through Parse, which refuses nesting deeper than kMaxDepth: nlohmann's
// copy, dump and comparison recurse once per level, so a deep enough document (a claim's
// opaque config, a netconf) would end the process with SIGSEGV, and its parse state grows
// with the depth. A field of the wrong type is an InvalidArgument error naming its path
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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rdmak8s/base/status.h"

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

// The deepest nesting Parse accepts: the root object or list is level 1. The deepest documents
// we read legitimately are a ResourceClaim (its opaque parameters sit at level 8, and our
// driver's options nest 2 more) and a ResourceSlice (attributes at level 6); 128 leaves a
// tenant's or another driver's config room, and keeps every recursion of nlohmann's far from
// any stack's end. Go's encoding/json, which the API server uses, stops at 10,000.
inline constexpr size_t kMaxDepth = 128;

// Which members of a document Parse keeps: the rest are skipped while parsing (checked for
// syntax and depth, never built), so a large answer costs the memory of what is read of it.
// Each path names members from the root, dotted ("metadata.uid", "status.reservedFor.uid");
// a list is transparent (its items are filtered like the list's own member), and a path's last
// name keeps that member whole. Only members are filtered: the root is kept whatever its type.
class KeepOnly {
 public:
  KeepOnly(std::initializer_list<std::string_view> paths);

  // The members one object keeps. `whole`: every member, and all below them.
  struct Node {
    bool whole = false;
    std::map<std::string, Node, std::less<>> members;
  };
  const Node& root() const { return root_; }

 private:
  Node root_;
};

// `text` parsed; `what` names the document ("GET https://h/api/v1/nodes/n", "netconf") in the
// error: kInvalidArgument "<what>: not JSON: <nlohmann's syntax error,
// its line and column>" or "<what>:
// nested deeper than 128 levels (json_reader::kMaxDepth)": the parse stops there. With `keep`, only its members
// are kept (the others' types are then not checked: nobody reads them).
StatusOr<nlohmann::json> Parse(std::string_view text, std::string_view what,
                               const KeepOnly* keep = nullptr);

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
