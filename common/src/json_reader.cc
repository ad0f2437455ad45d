// The strict JSON reader (rdmak8s/json_reader.h).
#include "rdmak8s/json_reader.h"

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

Status WrongType(std::string_view path, std::string_view want, const json& got) {
  return InvalidArgumentError(std::string(path) + ": not " + std::string(want) + " (" + got.type_name() + ")");
}

}  // namespace

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
  if (!v.is_object()) return WrongType(path, "an object", v);
  return Status::Ok();
}

StatusOr<const json*> ObjectAt(const json& obj, std::string_view path, std::string_view key) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (v && !v->is_object()) return WrongType(Field(path, key), "an object", *v);
  return v;
}

StatusOr<const json*> ArrayAt(const json& obj, std::string_view path, std::string_view key) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (v && !v->is_array()) return WrongType(Field(path, key), "a list", *v);
  return v;
}

StatusOr<std::string> StringAt(const json& obj, std::string_view path, std::string_view key,
                               bool required) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) {
    if (required) return InvalidArgumentError(Field(path, key) + ": missing");
    return std::string();
  }
  if (!v->is_string()) return WrongType(Field(path, key), "a string", *v);
  return v->get<std::string>();
}

StatusOr<int64_t> IntAt(const json& obj, std::string_view path, std::string_view key,
                        int64_t default_value) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) return default_value;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return WrongType(Field(path, key), "an int64", *v);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  // 2^63 and above arrive as unsigned: out of the API's int64 range.
  return WrongType(Field(path, key), "an int64", *v);
}

StatusOr<bool> BoolAt(const json& obj, std::string_view path, std::string_view key,
                      bool default_value) {
  RDMAK8S_RETURN_IF_ERROR(RequireObject(obj, path));
  const json* v = Find(obj, key);
  if (!v) return default_value;
  if (!v->is_boolean()) return WrongType(Field(path, key), "a boolean", *v);
  return v->get<bool>();
}

}  // namespace rdmak8s::json_reader
