// The strict JSON reader (rdmak8s/json_reader.h).
#include "rdmak8s/json_reader.h"

#include <algorithm>
#include <cstdint>

namespace rdmak8s::json_reader {
namespace {

using nlohmann::json;

// obj[key] when obj is an object; nullptr when absent or null. The caller has checked `obj`.
const json* Find(const json& obj, std::string_view key) {
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace

Status Invalid(std::string_view path, std::string_view what) {
  return InvalidArgumentError(std::string(path) + ": " + std::string(what));
}

Status NotA(std::string_view path, std::string_view want, const json& got) {
  return Invalid(path, "not " + std::string(want) + " (" + got.type_name() + ")");
}

Status Missing(std::string_view path) { return Invalid(path, "missing"); }

Status CheckKeys(const json& obj, std::string_view path,
                 std::initializer_list<std::string_view> allowed) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
    std::vector<std::string_view> sorted(allowed);
    std::sort(sorted.begin(), sorted.end());
    std::string list;
    for (std::string_view a : sorted) list += (list.empty() ? "" : ", ") + std::string(a);
    return Invalid(Field(path, it.key()), "unknown field (allowed: " + list + ")");
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> StringList(const json& v, std::string_view path) {
  if (!v.is_array()) return NotA(path, "a list", v);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return NotA(Index(path, i), "a string", v[i]);
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::string Field(std::string_view path, std::string_view key) {
  return std::string(path) + "." + std::string(key);
}

std::string Index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

StatusOr<json> Parse(std::string_view text, std::string_view what) {
  json out = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return InvalidArgumentError(std::string(what) + ": answer is not JSON");
  return out;
}

Status RequireObject(const json& v, std::string_view path) {
  if (!v.is_object()) return NotA(path, "an object", v);
  return Status::Ok();
}

StatusOr<const json*> ObjectAt(const json& obj, std::string_view path, std::string_view key) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (v && !v->is_object()) return NotA(Field(path, key), "an object", *v);
  return v;
}

StatusOr<const json*> ArrayAt(const json& obj, std::string_view path, std::string_view key) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (v && !v->is_array()) return NotA(Field(path, key), "a list", *v);
  return v;
}

StatusOr<std::string> StringAt(const json& obj, std::string_view path, std::string_view key,
                               bool required) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) {
    if (required) return Missing(Field(path, key));
    return std::string();
  }
  if (!v->is_string()) return NotA(Field(path, key), "a string", *v);
  return v->get<std::string>();
}

StatusOr<int64_t> IntAt(const json& obj, std::string_view path, std::string_view key,
                        int64_t default_value) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) return default_value;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return NotA(Field(path, key), "an int64", *v);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  // 2^63 and above arrive as unsigned: out of the API's int64 range.
  return NotA(Field(path, key), "an int64", *v);
}

StatusOr<bool> BoolAt(const json& obj, std::string_view path, std::string_view key,
                      bool default_value) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) return default_value;
  if (!v->is_boolean()) return NotA(Field(path, key), "a boolean", *v);
  return v->get<bool>();
}

}  // namespace rdmak8s::json_reader
