// The strict-schema helpers of our JSON inputs (the device plugin's config, its selectors and
// allocate options, the DRA driver's --devices and opaque claim parameters): every error is
// kInvalidArgument naming the JSON path of the problem ("$.pools[1].selectors.vendors[0]: ...").
// Pure functions over nlohmann::json values; they never throw.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "rdmak8s/status.h"

namespace rdmak8s::node::schema {

// kInvalidArgument "<path>: <what>".
Status Bad(const std::string& path, const std::string& what);
// The allowed keys of an object; anything else is a typo we refuse rather than ignore.
Status CheckKeys(const nlohmann::json& obj, const std::string& path,
                 const std::set<std::string>& allowed);
// "object", "array", "string", ... as nlohmann names them.
std::string TypeName(const nlohmann::json& j);
// A non-empty list of non-empty strings.
StatusOr<std::vector<std::string>> StringList(const nlohmann::json& j, const std::string& path);
// 4-digit hex PCI IDs ("0x15B3" or "15b3"), normalised in place to lower case without 0x.
Status CheckHexIds(std::vector<std::string>& ids, const std::string& path, const char* what);
// Every value one of `allowed`.
Status CheckOneOf(const std::vector<std::string>& vals, const std::string& path,
                  const std::set<std::string>& allowed);

}  // namespace rdmak8s::node::schema
