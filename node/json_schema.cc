#include "node/json_schema.h"

#include <cctype>

#include <nlohmann/json.hpp>

namespace rdmak8s::node::schema {

using nlohmann::json;

Status Bad(const std::string& path, const std::string& what) {
  return InvalidArgumentError(path + ": " + what);
}

// The allowed keys of an object; anything else is a typo we refuse rather than ignore.
Status CheckKeys(const json& obj, const std::string& path, const std::set<std::string>& allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!allowed.count(it.key())) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Bad(path + "." + it.key(), "unknown field (allowed: " + list + ")");
    }
  }
  return Status::Ok();
}

std::string TypeName(const json& j) { return j.type_name(); }

StatusOr<std::vector<std::string>> StringList(const json& j, const std::string& path) {
  if (!j.is_array()) return Bad(path, "must be a list of strings, got " + TypeName(j));
  if (j.empty()) return Bad(path, "must not be empty (leave the selector out to match all)");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    if (!j[i].is_string()) return Bad(p, "must be a string, got " + TypeName(j[i]));
    std::string s = j[i].get<std::string>();
    if (s.empty()) return Bad(p, "must not be empty");
    out.push_back(std::move(s));
  }
  return out;
}

Status CheckHexIds(std::vector<std::string>& ids, const std::string& path, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string s = ids[i];
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
    bool ok = s.size() == 4;
    for (char& c : s) {
      ok = ok && std::isxdigit(static_cast<unsigned char>(c));
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (!ok) {
      return Bad(path + "[" + std::to_string(i) + "]",
                 "\"" + ids[i] + "\" is not a 4-digit hex PCI " + what);
    }
    ids[i] = s;
  }
  return Status::Ok();
}

Status CheckOneOf(const std::vector<std::string>& vals, const std::string& path,
                  const std::set<std::string>& allowed) {
  for (size_t i = 0; i < vals.size(); ++i) {
    if (!allowed.count(vals[i])) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return Bad(path + "[" + std::to_string(i) + "]",
                 "\"" + vals[i] + "\" is not one of " + list);
    }
  }
  return Status::Ok();
}

}  // namespace rdmak8s::node::schema
